"""Import another weakly supervised detector's detections as our weak-detections contract.

Any black box can stand in for the built-in CAM: its detections on a split are checked
against that split's image ids and class names and written as a COCO results json
(``image_id``, ``category_id``, ``bbox`` xywh 0-based, ``score``). Formats:

* ``coco``: a COCO results json list. ``image_id`` is the split's image id (or the file stem /
  ``file_name`` as a string); ``category_id`` is the split's id (or ``category_name`` /
  ``category`` gives the class name). Boxes ``x, y, w, h`` are taken as is.
* ``voc_txt``: VOC devkit result files ``comp4_det_<split>_<class>.txt`` (a folder holding them
  or a glob), one line per box ``<image id> <score> <x1> <y1> <x2> <y2>``, VOC's 1-based
  inclusive corners -> ``x1 - 1, y1 - 1, x2, y2`` (as the data stage's VOC loader converts boxes).
  The class is the longest class name that ends the file stem after ``_``.
* ``pkl``: ``detections.pkl`` of PCL / OICR-pytorch (py-faster-rcnn's ``all_boxes``):
  ``all_boxes[class][image]`` = (N, 5) ``x1, y1, x2, y2, score`` with 0-based *inclusive*
  corners (-> ``x2 + 1, y2 + 1``); ``class`` 0 is background when there are C + 1 lists;
  images in split order unless the pickle has ``image_ids`` / ``im_names`` / ``image_names``.
  Unpickling runs code: it needs ``allow_pickle=True`` and warns.

Every mismatch is collected (image ids not in the split, unknown classes, malformed lines) and
reported exactly; by default any mismatch raises, ``drop_unmatched=True`` drops those entries
and returns the report instead.

Coverage: an import must cover the split. Its *coverage* is the share of the split's labelled
(image, class) pairs that have at least one detection of that class; below ``min_coverage``
(default :data:`MIN_COVERAGE`; ``--min-coverage`` of ``wsod weak``, 0 accepts any import) the
import is refused, naming the classes without a detection and the images without one (e.g.
3 of 20 VOC class files given). Any gap above the threshold is printed to stderr.
"""

from __future__ import annotations

import glob
import os
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from wsod.contracts import ContractError, make_detections, validate_detections
from wsod.utils.io import PickleNotAllowedError, read_json, read_pickle

FORMATS = ("coco", "voc_txt", "pkl")
MIN_COVERAGE = 0.9
"""Default least share of a split's labelled (image, class) pairs an import must detect."""


class DetectionImportError(ValueError):
    """Detections could not be imported; the message says what did not match and the fix."""


def guess_format(path: str | os.PathLike) -> str:
    """``coco`` for .json, ``pkl`` for .pkl/.pickle, ``voc_txt`` for folders, .txt and globs."""
    p = str(path)
    if p.endswith(".json"):
        return "coco"
    if p.endswith((".pkl", ".pickle")):
        return "pkl"
    if os.path.isdir(p) or p.endswith(".txt") or any(ch in p for ch in "*?["):
        return "voc_txt"
    raise DetectionImportError(
        f"{path}: cannot tell the format; pass --import-format ({', '.join(FORMATS)})"
    )


class _Matcher:
    """Maps foreign image / class references to the split's ids and counts what fails."""

    def __init__(self, split: Mapping) -> None:
        self.ids = {int(im["id"]) for im in split["images"]}
        self.by_name: dict[str, int] = {}
        for im in split["images"]:
            fn = str(im["file_name"])
            self.by_name[fn] = int(im["id"])
            self.by_name[Path(fn).name] = int(im["id"])
            self.by_name[Path(fn).stem] = int(im["id"])
        self.cat_ids = {int(c["id"]) for c in split["categories"]}
        self.cat_by_name = {str(c["name"]): int(c["id"]) for c in split["categories"]}
        self.bad_images: Counter = Counter()
        self.bad_classes: Counter = Counter()
        self.malformed: list[str] = []

    def image(self, ref: Any) -> int | None:
        if isinstance(ref, (int, np.integer)) and int(ref) in self.ids:
            return int(ref)
        key = str(ref)
        if key in self.by_name:
            return self.by_name[key]
        if key.isdigit() and int(key) in self.ids and key not in self.by_name:
            return int(key)
        self.bad_images[key] += 1
        return None

    def category(self, ref: Any = None, name: Any = None) -> int | None:
        if name is not None:
            if str(name) in self.cat_by_name:
                return self.cat_by_name[str(name)]
            self.bad_classes[str(name)] += 1
            return None
        if ref is not None and int(ref) in self.cat_ids:
            return int(ref)
        self.bad_classes[str(ref)] += 1
        return None

    def report(self, fmt: str, path: str, num_read: int, num_kept: int) -> dict:
        return {
            "format": fmt,
            "file": path,
            "num_read": num_read,
            "num_kept": num_kept,
            "unmatched_images": dict(self.bad_images),
            "unmatched_classes": dict(self.bad_classes),
            "malformed": list(self.malformed),
        }


def _read_coco(path: Path, m: _Matcher) -> tuple[list[dict], int]:
    data = read_json(path)
    if isinstance(data, Mapping) and "annotations" in data:
        data = data["annotations"]
    if not isinstance(data, list):
        raise DetectionImportError(
            f"{path}: want a COCO results list [{{image_id, category_id, bbox, score}}}}]"
        )
    out = []
    for i, d in enumerate(data):
        if not isinstance(d, Mapping) or "bbox" not in d or "image_id" not in d:
            m.malformed.append(f"entry {i}: needs image_id, bbox, score")
            continue
        img = m.image(d["image_id"])
        name = d.get("category_name", d.get("category"))
        cat = (
            m.category(d.get("category_id"), name)
            if (name is not None or "category_id" in d)
            else None
        )
        if cat is None and name is None and "category_id" not in d:
            m.malformed.append(f"entry {i}: no category_id")
        b = d["bbox"]
        if not (isinstance(b, (list, tuple)) and len(b) == 4) or "score" not in d:
            m.malformed.append(f"entry {i}: bad bbox {b!r} or no score")
            continue
        if img is not None and cat is not None:
            out.append(
                {
                    "image_id": img,
                    "category_id": cat,
                    "bbox": [float(v) for v in b],
                    "score": float(d["score"]),
                }
            )
    return out, len(data)


def _voc_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.txt"))
    elif path.is_file():
        files = [path]
    else:
        files = sorted(Path(p) for p in glob.glob(str(path)))
    if not files:
        raise DetectionImportError(
            f"{path}: no VOC result files (want comp4_det_<split>_<class>"
            ".txt in a folder, or a glob)"
        )
    return files


def _read_voc_txt(path: Path, m: _Matcher) -> tuple[list[dict], int]:
    names = sorted(m.cat_by_name, key=len, reverse=True)
    out, n = [], 0
    for f in _voc_files(path):
        cls = next((c for c in names if f.stem.endswith("_" + c) or f.stem == c), None)
        lines = f.read_text().splitlines()
        if cls is None:
            m.bad_classes[f"{f.name} (no class name ends the file name)"] += len(lines)
            n += len(lines)
            continue
        cat = m.cat_by_name[cls]
        for ln, line in enumerate(lines, 1):
            parts = line.split()
            if not parts:
                continue
            n += 1
            if len(parts) != 6:
                m.malformed.append(f"{f}:{ln}: {line!r} (want 'image_id score x1 y1 x2 y2')")
                continue
            try:
                score, x1, y1, x2, y2 = (float(v) for v in parts[1:])
            except ValueError:
                m.malformed.append(f"{f}:{ln}: {line!r} (non-numeric)")
                continue
            img = m.image(parts[0])
            if img is not None:
                # VOC 1-based inclusive -> 0-based continuous corners, then xywh
                out.append(
                    {
                        "image_id": img,
                        "category_id": cat,
                        "bbox": [x1 - 1, y1 - 1, x2 - x1 + 1, y2 - y1 + 1],
                        "score": score,
                    }
                )
    return out, n


def _read_pkl(
    path: Path,
    m: _Matcher,
    split: Mapping,
    allow_pickle: bool,
) -> tuple[list[dict], int]:
    try:  # the one pickle opt-in of the package
        obj = read_pickle(path, allow_pickle, hint="or export COCO json instead")
    except PickleNotAllowedError as e:
        raise DetectionImportError(str(e)) from None
    all_boxes = obj.get("all_boxes") if isinstance(obj, Mapping) else obj
    if not isinstance(all_boxes, (list, tuple)) or not all_boxes:
        raise DetectionImportError(
            f"{path}: want all_boxes[class][image] = (N,5) arrays "
            "(py-faster-rcnn / PCL detections.pkl)"
        )
    classes = [c["id"] for c in sorted(split["categories"], key=lambda c: c["id"])]
    if len(all_boxes) == len(classes) + 1:
        all_boxes = all_boxes[1:]  # background list first
    elif len(all_boxes) != len(classes):
        raise DetectionImportError(
            f"{path}: {len(all_boxes)} class lists; the split has "
            f"{len(classes)} classes (want C or C + 1 with background)"
        )
    refs = None
    if isinstance(obj, Mapping):
        refs = next((obj[k] for k in ("image_ids", "im_names", "image_names") if k in obj), None)
    if refs is None:
        refs = [im["id"] for im in split["images"]]
    out, n = [], 0
    for cat, per_image in zip(classes, all_boxes, strict=True):
        if len(per_image) != len(refs):
            raise DetectionImportError(
                f"{path}: {len(per_image)} images per class but {len(refs)} image references "
                "(the split's images in order, unless the pickle has image_ids)"
            )
        for ref, dets in zip(refs, per_image, strict=True):
            dets = (
                np.asarray(dets, dtype=np.float64).reshape(-1, 5) if len(dets) else np.zeros((0, 5))
            )
            n += len(dets)
            if not len(dets):
                continue
            img = m.image(ref)
            if img is None:
                continue
            boxes = dets[:, :4].copy()
            boxes[:, 2:] += 1.0  # 0-based inclusive -> continuous
            out += make_detections(img, boxes, dets[:, 4], np.full(len(dets), cat))
    return out, n


def import_detections(
    path: str | os.PathLike,
    split: Mapping,
    *,
    format: str | None = None,
    allow_pickle: bool = False,
    drop_unmatched: bool = False,
    min_coverage: float | None = None,
) -> tuple[list[dict], dict]:
    """Read foreign detections and map them onto ``split``.

    Args:
        path: the file (coco, pkl), folder or glob (voc_txt).
        split: the weak-label split the detections are for.
        format: ``coco``, ``voc_txt`` or ``pkl``; guessed from the path when None.
        allow_pickle: required for ``pkl``.
        drop_unmatched: drop entries that do not match instead of raising.
        min_coverage: refuse an import covering less than this share of the split's labelled
            (image, class) pairs (None: :data:`MIN_COVERAGE`; 0: accept any).

    Returns:
        (COCO results list validated against ``split``, report dict with ``num_read``,
        ``num_kept``, ``unmatched_images`` {ref: count}, ``unmatched_classes``, ``malformed``,
        and :func:`coverage`'s keys, ``images_without_detections`` among them).

    Raises:
        DetectionImportError: a mismatch (without ``drop_unmatched``), an unreadable file, or
            a coverage below ``min_coverage``.
    """
    min_coverage = MIN_COVERAGE if min_coverage is None else float(min_coverage)
    if not 0.0 <= min_coverage <= 1.0:
        raise DetectionImportError(f"--min-coverage {min_coverage}: want a share in [0, 1]")
    path = Path(path)
    fmt = format or guess_format(path)
    if fmt not in FORMATS:
        raise DetectionImportError(f"unknown import format {fmt!r}; choose one of {FORMATS}")
    if fmt != "voc_txt" and not path.is_file():
        raise DetectionImportError(f"{path}: no such file")
    m = _Matcher(split)
    if fmt == "coco":
        dets, n = _read_coco(path, m)
    elif fmt == "voc_txt":
        dets, n = _read_voc_txt(path, m)
    else:
        dets, n = _read_pkl(path, m, split, allow_pickle)
    report = m.report(fmt, str(path), n, len(dets))
    problems = []
    if m.bad_images:
        ex = ", ".join(f"{k!r} x{v}" for k, v in list(m.bad_images.items())[:10])
        problems.append(
            f"{sum(m.bad_images.values())} detections on {len(m.bad_images)} "
            f"images not in the split ({ex})"
        )
    if m.bad_classes:
        ex = ", ".join(f"{k!r} x{v}" for k, v in m.bad_classes.items())
        problems.append(
            f"{sum(m.bad_classes.values())} detections of unknown classes ({ex}); "
            f"split classes: {sorted(m.cat_by_name)}"
        )
    if m.malformed:
        problems.append(f"{len(m.malformed)} malformed entries, e.g. {m.malformed[:3]}")
    if problems and not drop_unmatched:
        raise DetectionImportError(
            f"{path}: "
            + "; ".join(problems)
            + "; fix the file or pass --drop-unmatched to drop them"
        )
    report["problems"] = problems
    try:
        dets = validate_detections(dets, split, where=str(path))
    except ContractError as e:
        raise DetectionImportError(str(e)) from e
    report.update(coverage(dets, split), min_coverage=min_coverage)
    _check_coverage(path, report, min_coverage)
    return dets, report


def coverage(dets: list[dict], split: Mapping) -> dict:
    """How much of ``split`` the detections cover.

    Returns:
        ``coverage``: share of the split's labelled (image, class) pairs with a detection of
        that class (1.0 for a split without labels); ``labelled_pairs``, ``covered_pairs``;
        ``classes_without_detections``: names of the split's classes with no detection at all;
        ``images_without_detections``: how many of the split's images have none.
    """
    labelled = {(int(im["id"]), int(c)) for im in split["images"] for c in im.get("labels", [])}
    detected = {(int(d["image_id"]), int(d["category_id"])) for d in dets}
    covered = len(labelled & detected)
    cats = sorted(split["categories"], key=lambda c: c["id"])
    with_dets = {c for _, c in detected}
    return {
        "coverage": covered / len(labelled) if labelled else 1.0,
        "labelled_pairs": len(labelled),
        "covered_pairs": covered,
        "classes_without_detections": [str(c["name"]) for c in cats if c["id"] not in with_dets],
        "images_without_detections": len(
            {int(im["id"]) for im in split["images"]} - {i for i, _ in detected}
        ),
    }


def _check_coverage(path: Path, report: dict, min_coverage: float) -> None:
    """Print the import's gaps to stderr; raise when its coverage is below ``min_coverage``."""
    missing = report["classes_without_detections"]
    gaps = (
        f"{report['covered_pairs']} of the split's {report['labelled_pairs']} labelled "
        f"(image, class) pairs have a detection ({report['coverage']:.1%}); "
        f"{len(missing)} classes without any detection {missing}; "
        f"{report['images_without_detections']} images without any detection"
    )
    if report["coverage"] < min_coverage:
        raise DetectionImportError(
            f"{path}: {gaps}; below --min-coverage {min_coverage:g}: give the missing classes' "
            "detections, or lower --min-coverage (0 accepts any import)"
        )
    if missing or report["images_without_detections"] or report["coverage"] < 1.0:
        print(f"{path}: {gaps}", file=sys.stderr)
