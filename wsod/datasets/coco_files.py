"""COCO json datasets (``format='coco'``): ``images`` entries give ``file_name`` relative to the
data root (``source`` if it is a folder, else the json's folder), and ``labels`` (category ids
or names) per image; without ``labels`` an image's labels are the categories of its
annotations, which become eval-only boxes. Classes are the json's ``categories`` in id order
(renumbered 1..K) unless ``classes`` is given. How ``splits`` name the files, image ids and
sizes: :mod:`wsod.datasets.custom`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from wsod.contracts import is_ignored
from wsod.datasets.base import (
    BadItem,
    DatasetError,
    SplitData,
    handle_bad,
    image_size,
)
from wsod.datasets.custom import resolve_split_file


def _read_coco(path: Path) -> dict:
    try:
        coco = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid json ({e}); fix the file") from e
    if not isinstance(coco, dict) or not isinstance(coco.get("images"), list):
        raise DatasetError(f"{path}: not a COCO json (needs 'images' and 'categories')")
    if not coco["images"]:
        raise DatasetError(f"{path}: the split has no images; add some or drop this split")
    if not coco.get("categories"):
        raise DatasetError(f"{path}: no 'categories'; add them to the json")
    return coco


def coco_classes(files: Sequence[Path]) -> list[str]:
    """Class names of the first json's categories in id order; all files must agree."""
    names = None
    for f in files:
        coco = _read_coco(f)
        these = [c["name"] for c in sorted(coco["categories"], key=lambda c: c["id"])]
        if names is None:
            names = these
        elif set(these) != set(names):
            raise DatasetError(f"{f}: its categories differ from {files[0]}'s; give --classes")
    return list(names or [])


def coco_split_files(source: Path, splits: Sequence[str]) -> list[tuple[str, Path]]:
    """``[(split name, json path)]`` for the COCO format (see the module docstring)."""
    if source.is_file():
        name = splits[0] if len(splits) == 1 else source.stem
        return [(name, source.resolve())]
    out = []
    for s in splits:
        p = resolve_split_file(source, s, ".json")
        out.append((Path(s).stem, p))
    return out


def _coco_labels(
    im: dict, anns: list, src_cats: dict, cat_of: dict, path: Path, classes: Sequence[str]
) -> list[str]:
    """An image's class names: its ``labels`` (ids or names), else its annotations' classes."""
    raw = im.get("labels")
    if raw is None:
        raw = [a.get("category_id") for a in anns]
    names = []
    for lab in raw:
        name = src_cats.get(lab, lab if isinstance(lab, str) else None)
        if name not in cat_of:
            raise BadItem(
                path,
                f"image {im['file_name']}: unknown class {lab!r} (known: {', '.join(classes)})",
            )
        names.append(name)
    return names


def _coco_boxes(im: dict, anns: list, src_cats: dict, cat_of: dict, path: Path) -> list[dict]:
    """An image's annotations as eval-only boxes (COCO xywh, our category ids)."""
    out = []
    for a in anns:
        name = src_cats.get(a.get("category_id"))
        if name not in cat_of:
            raise BadItem(
                path,
                f"annotation {a.get('id')} of {im['file_name']}: unknown "
                f"category {a.get('category_id')!r}",
            )
        out.append(
            {
                "image_id": im["id"],
                "category_id": cat_of[name],
                "bbox": [float(v) for v in a["bbox"]],
                "difficult": int(is_ignored(a)),
            }
        )
    return out


def load_coco_split(
    source: str | os.PathLike,
    split: str,
    path: str | os.PathLike,
    *,
    classes: Sequence[str],
    limit: int | None = None,
    skip_bad: bool = False,
) -> SplitData:
    """Read one COCO json split; its annotations (if any) become eval-only boxes."""
    source = Path(source).resolve()
    path = Path(path).resolve()
    root = source if source.is_dir() else path.parent
    coco = _read_coco(path)
    src_cats = {c["id"]: c["name"] for c in coco["categories"]}
    cat_of = {c: i + 1 for i, c in enumerate(classes)}
    anns_by_img: dict = {}
    for a in coco.get("annotations", []) or []:
        anns_by_img.setdefault(a.get("image_id"), []).append(a)
    images = coco["images"][: int(limit)] if limit is not None else coco["images"]
    data = SplitData(
        name=split,
        data_root=root,
        classes=list(classes),
        format="coco",
        has_boxes=bool(coco.get("annotations")),
        inputs=[str(path)],
    )
    seen: set = set()
    for im in images:
        item = im.get("file_name", im.get("id"))
        try:
            if "id" not in im or "file_name" not in im:
                raise BadItem(path, f"image entry {im!r} needs 'id' and 'file_name'")
            if im["id"] in seen:
                raise BadItem(path, f"image id {im['id']} appears twice")
            anns = anns_by_img.get(im["id"], [])
            names = _coco_labels(im, anns, src_cats, cat_of, path, classes)
            out_anns = _coco_boxes(im, anns, src_cats, cat_of, path)
            width, height = image_size(root / im["file_name"])
            given = (int(im.get("width") or width), int(im.get("height") or height))
            if given != (width, height):
                raise BadItem(
                    path,
                    f"image {im['file_name']}: the json gives {given[0]}x{given[1]} but the "
                    f"image is {width}x{height} as displayed (EXIF orientation applied, as "
                    "every stage reads it); fix or drop its width and height",
                )
        except BadItem as e:
            handle_bad(data, item, e, skip_bad)
            continue
        seen.add(im["id"])
        data.images.append(
            {
                "id": im["id"],
                "file_name": Path(im["file_name"]).as_posix(),
                "width": width,
                "height": height,
                "labels": sorted({cat_of[n] for n in names}),
            }
        )
        data.annotations.extend(out_anns)
    return data
