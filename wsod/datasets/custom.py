"""Custom datasets: a folder of tagged images described by a CSV (or a COCO json, read by
:mod:`wsod.datasets.coco_files`).

How ``splits`` are resolved (``--splits`` on the command line): each entry names a CSV (or json)
file. An existing file path is used as is; otherwise ``<source>/<split>.csv`` (``.json`` for
COCO). The output split is named after the file's stem (``train.csv`` -> ``train.json`` and
``train_gt.json``). For COCO, ``source`` may also be a single json file: it is then the only
split, named by the one ``--splits`` entry given, else by the file's stem.

CSV (``format='csv'``): ``source`` is the image folder (the data root). Read as spreadsheets
save CSVs: UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"), CRLF or LF, and ``;``
between the two cells instead of ``,`` where every row reads so (``file;label1,label2``, a
spreadsheet set to a decimal comma). One row per image: ``file,label1;label2`` where ``file`` is relative to ``source`` and the labels are class names
separated by ``;``. The label column is required: an image with no object of any class is
written ``file,`` (an empty label cell); a row without the comma is an error, so a lost label
column is never read as "no labels". A header row whose first cell is
``file``/``file_name``/``filename``/``image``/``path`` is optional. Classes are the sorted union
of the names in all the split CSVs, unless ``classes`` is given (then an unknown name is an
error). Without ``classes``, names that differ only in case (``Car`` / ``car``) are an error,
and a name that nearly spells a more frequent one (``hrose`` / ``horse``) gives a one-line warning
naming its row and the near match; give ``classes`` to make every unknown name an error. Across
splits (:func:`check_splits`): an image in two splits is an error; a class with no image in
the training split is a one-line warning.

Eval-only boxes (``boxes=``): for CSV, a COCO json (images matched by ``file_name``, categories
by name) or a folder of VOC XML files named ``<image stem>.xml``; for COCO, the json's own
``annotations``. They go only to ``<split>_gt.json``, never to the training split. Without
boxes the ``_gt`` file has no annotations and ``info.has_boxes`` is false; when the boxes cover
some images only (those listed in the json, or with an XML file), ``info.boxed_images`` lists
their ids and evaluation scores those images only.

Image ids are ``int(stem)`` when every file stem is numeric and unique, else 1..N in list order
(COCO keeps its own ids). Width and height are the image's as displayed, EXIF orientation applied
(the size rule of :mod:`wsod.contracts`), read from its header; a COCO json that gives another
size is an error.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import os
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from wsod.contracts import is_ignored
from wsod.datasets.base import (
    BadItem,
    DatasetError,
    SplitData,
    assign_ids,
    handle_bad,
    image_size,
)
from wsod.datasets.voc import parse_voc_xml

_HEADER_NAMES = {"file", "file_name", "filename", "image", "path", "image_path"}


def resolve_split_file(source: Path, split: str, ext: str) -> Path:
    """An existing file path, else ``<source>/<split><ext>``."""
    p = Path(split)
    if p.is_file():
        return p.resolve()
    cand = source / (split if split.endswith(ext) else f"{split}{ext}")
    if not cand.is_file():
        raise DatasetError(
            f"{cand}: split file not found; name an existing {ext} file (or a "
            f"split whose {ext} file lies in --source) with --splits"
        )
    return cand.resolve()


# ----------------------------------------------------------------------------- CSV
def _csv_text(path: Path) -> str:
    """The CSV's text as spreadsheets save it: UTF-8 with or without a byte-order mark (Excel's
    "CSV UTF-8" starts with one), any line ending (``newline=''`` keeps quoted cells intact)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise DatasetError(
            f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); save the sheet as "
            "'CSV UTF-8' (Excel) or 'Text CSV' with the UTF-8 character set"
        ) from None


def _parse(path: Path, text: str, delimiter: str) -> tuple[list[tuple[int, list[str]]], str | None]:
    """``([(line number, cells)], first error or None)`` of ``text`` read with ``delimiter``;
    blank rows and a header row are left out."""
    rows: list[tuple[int, list[str]]] = []
    error = None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    first = True
    start = 1
    for row in reader:
        n, start = start, reader.line_num + 1  # the row's first line (a quoted cell may span)
        if not row or not any(c.strip() for c in row):
            continue
        if first and row[0].strip().lower() in _HEADER_NAMES:
            first = False
            continue
        first = False
        if error is None and len(row) > 2:
            error = (
                f"{path}:{n}: expected 'file{delimiter}label1;label2' (2 columns), got "
                f"{len(row)}; quote the label cell or use ';' between labels"
            )
        elif error is None and len(row) < 2:
            error = (
                f"{path}:{n}: row {row[0].strip()!r} has no label column; write "
                "'file,label1;label2', or 'file,' for an image with no object of any class"
            )
        rows.append((n, row))
    return rows, error


def read_label_rows(path: Path) -> list[tuple[int, str, list[str]]]:
    """Rows ``(line number, file, [class names])`` of a label CSV; see the module docstring.

    Read as spreadsheets write CSVs: UTF-8 with or without a byte-order mark, CRLF or LF line
    ends, and cells separated by ``,`` or, when every row reads as two cells with ``;`` and not
    with ``,`` (a spreadsheet set to a decimal comma), by ``;``; the labels of a ``;``-separated
    row are then separated by ``,`` or ``;`` inside a quoted cell (``a.jpg;"cat,dog"``).

    Raises:
        DatasetError: not UTF-8, a row without the label column or with more than two columns
            (naming the file and line), or no rows.
    """
    text = _csv_text(path)
    rows, error = _parse(path, text, ",")
    sep = "[;]"
    if error is not None:
        semi, semi_error = _parse(path, text, ";")
        if semi_error is not None:
            raise DatasetError(error)
        rows, sep = semi, "[;,]"
    out = []
    for n, (file, labels) in rows:
        names = [s.strip() for s in re.split(sep, labels) if s.strip()]
        out.append((n, file.strip(), sorted(set(names))))
    if not out:
        raise DatasetError(
            f"{path}: the split CSV is empty; add rows 'file,label1;label2' or "
            "drop this split from --splits"
        )
    return out


def read_label_csv(path: Path) -> list[tuple[str, list[str]]]:
    """Rows ``(file, [class names])`` of a label CSV; see the module docstring."""
    return [(fname, names) for _, fname, names in read_label_rows(path)]


def check_case_duplicates(names: Sequence[str], where: str) -> None:
    """Refuse class names that differ only in case (``Car`` / ``car``).

    Raises:
        DatasetError: naming the spellings and ``where`` they come from.
    """
    groups: dict[str, list[str]] = {}
    for n in dict.fromkeys(names):
        groups.setdefault(n.casefold(), []).append(n)
    dups = [g for g in groups.values() if len(g) > 1]
    if dups:
        raise DatasetError(
            f"{where}: class names that differ only in case: "
            f"{'; '.join(' / '.join(g) for g in dups)}; use one spelling per class"
        )


# difflib ratio from which a rare class name reads as a typo of a more frequent one:
# 'hrose' / 'horse' 0.8, 'persn' / 'person' 0.91; two real classes 'car' / 'chair' 0.75,
# 'cat' / 'car' 0.67
TYPO_CUTOFF = 0.8


def near_typos(counts: Counter) -> dict[str, str]:
    """``{name: the more frequent name it nearly spells}``: class names that read as typos of
    another (difflib, :data:`TYPO_CUTOFF`), e.g. ``{'hrose': 'horse'}``, and are rare beside it
    (on at most 2 images, or a third as many). A rare name without such a neighbour is a class
    like any other."""
    out = {}
    for c in sorted(counts):
        # a typo is rare: on at most 2 images, or a third of the name it misspells
        more = sorted(
            o for o in counts if counts[o] > counts[c] and 3 * counts[c] <= max(counts[o], 6)
        )
        match = difflib.get_close_matches(c, more, n=1, cutoff=TYPO_CUTOFF)
        if match:
            out[c] = match[0]
    return out


def _images(n: int) -> str:
    return f"{n} image{'s' if n != 1 else ''}"


def csv_classes(files: Sequence[Path]) -> list[str]:
    """Sorted union of the class names in the CSVs (no ``--classes`` given).

    Names that differ only in case are an error; a name that nearly spells a more frequent one
    (``hrose`` / ``horse``) gives a one-line warning naming its first row and the near match.
    """
    counts: Counter = Counter()
    first: dict[str, str] = {}
    for f in files:
        for n, _, labels in read_label_rows(f):
            counts.update(labels)
            for c in labels:
                first.setdefault(c, f"{f}:{n}")
    if not counts:
        raise DatasetError(f"{files[0]}: no class names in the CSV files; give --classes")
    check_case_duplicates(sorted(counts), ", ".join(str(f) for f in files))
    for c, match in near_typos(counts).items():
        warnings.warn(
            f"{first[c]}: class {c!r} ({_images(counts[c])}) looks like a typo of {match!r} "
            f"({_images(counts[match])}); fix the row, or give --classes to refuse names not "
            "in the list",
            stacklevel=2,
        )
    return sorted(counts)


def check_splits(splits: Sequence[SplitData]) -> list[str]:
    """Cross-split checks, before anything is written.

    An image listed in two splits is refused (an image the detectors learn from cannot measure
    them). A class with no image in the training split (``train``, else the first split) gives
    one warning line naming the classes: the detectors cannot learn them.

    Returns:
        The warning lines (one at most).

    Raises:
        DatasetError: naming the image, its two splits and the fix.
    """
    seen: dict[str, str] = {}
    for data in splits:
        for im in data.images:
            key = str((Path(data.data_root) / im["file_name"]).resolve())
            if key in seen and seen[key] != data.name:
                raise DatasetError(
                    f"{im['file_name']}: listed in split '{seen[key]}' and in split "
                    f"'{data.name}'; an image the detectors learn from cannot measure them: "
                    "remove it from one of the two"
                )
            seen[key] = data.name
    if not splits:
        return []
    train = next((d for d in splits if d.name == "train"), splits[0])
    per_class = Counter(lab for im in train.images for lab in im["labels"])
    missing = [c for i, c in enumerate(train.classes, 1) if not per_class[i]]
    if not missing:
        return []
    return [
        f"split '{train.name}' has no image of class {', '.join(map(repr, missing))}: the "
        "detectors cannot learn it; add training images of it, or leave it out (--classes)"
    ]


class _BoxSource:
    """Eval-only boxes for custom datasets, keyed by image file name (or stem for VOC XML)."""

    def __init__(self, path: Path, classes: Sequence[str]) -> None:
        self.path = path
        self.classes = list(classes)
        self.cat_of = {c: i + 1 for i, c in enumerate(classes)}
        self.by_file: dict[str, list[dict]] | None = None
        if path.is_dir():
            return  # VOC XML folder, read per image
        if not path.is_file():
            raise DatasetError(
                f"{path}: boxes file not found; give a COCO json or a folder of "
                "VOC XML files with --boxes"
            )
        try:
            coco = json.loads(path.read_text())
            cats = {c["id"]: c["name"] for c in coco["categories"]}
            files = {im["id"]: im["file_name"] for im in coco["images"]}
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise DatasetError(
                f"{path}: not a COCO instances json ({e}); fix it or drop --boxes"
            ) from e
        unknown = sorted(set(cats.values()) - set(self.cat_of))
        if unknown:
            raise DatasetError(
                f"{path}: unknown class names {unknown} in the boxes' categories "
                f"(known: {', '.join(classes)}); fix --classes or the file"
            )
        self.by_file = {}
        self.files = set(files.values())
        for a in coco.get("annotations", []):
            fname = files.get(a.get("image_id"))
            if fname is None:
                continue
            self.by_file.setdefault(fname, []).append(
                {
                    "category_id": self.cat_of[cats[a["category_id"]]],
                    "bbox": [float(v) for v in a["bbox"]],
                    "difficult": int(is_ignored(a)),
                }
            )

    def covers(self, file_name: str) -> bool:
        """Whether the source annotates the image (a box-less image listed in the json, or an
        XML file, counts: it was annotated and has no object)."""
        if self.by_file is not None:
            return file_name in self.files or Path(file_name).name in self.files
        return (self.path / f"{Path(file_name).stem}.xml").is_file()

    def boxes_for(self, file_name: str) -> list[dict]:
        if self.by_file is not None:
            return self.by_file.get(file_name, self.by_file.get(Path(file_name).name, []))
        xml = self.path / f"{Path(file_name).stem}.xml"
        if not xml.is_file():
            return []
        out = []
        for o in parse_voc_xml(xml, self.classes)["objects"]:
            x1, y1, x2, y2 = o["bbox"]
            out.append(
                {
                    "category_id": o["category_id"],
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "difficult": o["difficult"],
                }
            )
        return out


def load_csv_split(
    source: str | os.PathLike,
    split: str,
    *,
    classes: Sequence[str],
    boxes: str | os.PathLike | None = None,
    limit: int | None = None,
    skip_bad: bool = False,
) -> SplitData:
    """Read one CSV split (see the module docstring). ``classes`` fixes the category ids."""
    root = Path(source).resolve()
    path = resolve_split_file(root, split, ".csv")
    rows = read_label_rows(path)
    if limit is not None:
        rows = rows[: int(limit)]
    data = SplitData(
        name=path.stem,
        data_root=root,
        classes=list(classes),
        format="csv",
        has_boxes=boxes is not None,
        inputs=[str(path)],
    )
    box_src = _BoxSource(Path(boxes).resolve(), classes) if boxes is not None else None
    if box_src is not None and box_src.by_file is not None:
        data.inputs.append(str(box_src.path))
    cat_of = {c: i + 1 for i, c in enumerate(classes)}
    ids = assign_ids([Path(f).stem for _, f, _ in rows])
    if len(set(ids)) != len(ids):  # pragma: no cover - assign_ids guarantees uniqueness
        raise DatasetError(f"{path}: duplicate image ids")
    seen_files: set[str] = set()
    boxed: list[int] = []
    for (line, fname, names), img_id in zip(rows, ids, strict=True):
        try:
            if fname in seen_files:
                raise BadItem(fname, "image is listed twice")
            unknown = [c for c in names if c not in cat_of]
            if unknown:
                raise BadItem(fname, f"unknown class names {unknown} (known: {', '.join(classes)})")
            width, height = image_size(root / fname)
            anns = box_src.boxes_for(fname) if box_src is not None else []
        except BadItem as e:
            handle_bad(data, fname, e, skip_bad, where=f"{path}:{line}")
            continue
        seen_files.add(fname)
        data.images.append(
            {
                "id": img_id,
                "file_name": Path(fname).as_posix(),
                "width": width,
                "height": height,
                "labels": sorted(cat_of[c] for c in names),
            }
        )
        data.annotations.extend({"image_id": img_id, **a} for a in anns)
        if box_src is not None and box_src.covers(fname):
            boxed.append(img_id)
    if box_src is not None and len(boxed) < len(data.images):
        data.boxed_images = boxed  # a subset: evaluation scores only these images
    return data
