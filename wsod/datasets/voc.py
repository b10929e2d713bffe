"""PASCAL VOC loader: a ``VOCdevkit/VOC2007``-style folder -> :class:`SplitData`.

Layout read (any split that has ``ImageSets/Main/<split>.txt``: train, val, trainval, test):

- ``ImageSets/Main/<split>.txt``: image ids, one per line;
- ``ImageSets/Main/<class>_<split>.txt``: per-class image labels (``1`` present, ``0`` present
  only as 'difficult', ``-1`` absent). When these lists exist for every class they give the
  image-level labels (1 and 0 both mean present); otherwise the labels are the classes of the
  XML objects;
- ``Annotations/<id>.xml``: image size and boxes (eval-only: they go to ``<split>_gt.json``);
- ``JPEGImages/<id>.jpg``: decoded fully once (:func:`wsod.datasets.base.image_size`): a
  truncated or corrupt image, or one the decoder warns about, is bad input.

Box conversion: VOC XML corners are 1-based and inclusive (a box covering only the first pixel
is ``xmin = xmax = 1``). We map them to 0-based *continuous* corners ``x1 = xmin - 1,
y1 = ymin - 1, x2 = xmax, y2 = ymax``, so that ``x2 - x1 = xmax - xmin + 1`` is the box width in
pixels and the box covers exactly the annotated pixels. (mmdet's ``VOCDataset`` subtracts 1 from
all four corners instead; the difference is one pixel of width and does not change VOC AP at
IoU 0.5 noticeably.)
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from wsod import VOC_CLASSES
from wsod.datasets.base import (
    BadItem,
    DatasetError,
    SplitData,
    handle_bad,
    image_id_of,
    image_size,
)

_IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".JPG", ".JPEG", ".PNG")


def voc_box_to_xyxy(xmin: float, ymin: float, xmax: float, ymax: float) -> list[float]:
    """VOC 1-based inclusive corners -> 0-based continuous ``[x1, y1, x2, y2]``."""
    return [float(xmin) - 1.0, float(ymin) - 1.0, float(xmax), float(ymax)]


def available_splits(root: str | os.PathLike) -> list[str]:
    """Split names that have an ``ImageSets/Main/<split>.txt`` list (no per-class lists)."""
    main = Path(root) / "ImageSets" / "Main"
    if not main.is_dir():
        return []
    return sorted(p.stem for p in main.glob("*.txt") if "_" not in p.stem)


def read_id_list(path: Path) -> list[str]:
    """Image ids of a split list (first token of each non-empty line)."""
    return [line.split()[0] for line in path.read_text().splitlines() if line.strip()]


def read_class_lists(
    root: Path, split: str, classes: Sequence[str]
) -> tuple[dict[str, set[str]] | None, list[str]]:
    """Per-class image lists -> ``{image id: set of class names present}``.

    Returns:
        ``(labels, files)``: ``labels`` is None when no per-class list exists for this split
        (labels then come from the XML objects); ``files`` are the lists read.

    Raises:
        DatasetError: only some classes have a list, or a line is malformed.
    """
    main = root / "ImageSets" / "Main"
    paths = [main / f"{c}_{split}.txt" for c in classes]
    present = [p for p in paths if p.is_file()]
    if not present:
        return None, []
    if len(present) != len(paths):
        missing = [str(p) for p in paths if not p.is_file()]
        raise DatasetError(
            f"{missing[0]}: per-class label list missing ({len(missing)} of {len(paths)} "
            f"missing); restore it, or remove all <class>_{split}.txt lists to take labels "
            "from the XML objects"
        )
    labels: dict[str, set[str]] = {}
    for cls, path in zip(classes, paths, strict=True):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or parts[1] not in ("1", "0", "-1"):
                raise DatasetError(
                    f"{path}:{n}: malformed line {line!r} (want '<id> 1|0|-1'); fix the list"
                )
            ids = labels.setdefault(parts[0], set())
            if parts[1] in ("1", "0"):
                ids.add(cls)
    return labels, [str(p) for p in paths]


def parse_voc_xml(path: Path, classes: Sequence[str]) -> dict:
    """Read one VOC annotation file.

    Returns:
        ``{"width": int|None, "height": int|None, "objects": [{"name", "category_id",
        "bbox": [x1, y1, x2, y2] 0-based continuous, "difficult": 0|1}]}``.

    Raises:
        BadItem: missing or malformed file, unknown class name, or an invalid box.
    """
    if not path.is_file():
        raise BadItem(path, "annotation XML is missing")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise BadItem(path, f"malformed XML ({e})") from e
    width = height = None
    size = root.find("size")
    if size is not None:
        try:
            width = int(float(size.findtext("width", "0")))
            height = int(float(size.findtext("height", "0")))
        except ValueError as e:
            raise BadItem(path, f"malformed <size> ({e})") from e
        if width <= 0 or height <= 0:
            width = height = None
    cat_of = {c: i + 1 for i, c in enumerate(classes)}
    objects = []
    for obj in root.iter("object"):
        name = (obj.findtext("name") or "").strip()
        if name not in cat_of:
            raise BadItem(path, f"unknown class name {name!r} (known: {', '.join(classes)})")
        bnd = obj.find("bndbox")
        try:
            coords = [float(bnd.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax")]
            difficult = int(float(obj.findtext("difficult") or 0))
        except (AttributeError, TypeError, ValueError) as e:
            raise BadItem(
                path, f"malformed <object> {name!r}: needs bndbox xmin/ymin/xmax/ymax ({e})"
            ) from e
        box = voc_box_to_xyxy(*coords)
        if box[2] < box[0] or box[3] < box[1]:
            raise BadItem(path, f"object {name!r} has xmax < xmin or ymax < ymin: {coords}")
        objects.append(
            {
                "name": name,
                "category_id": cat_of[name],
                "bbox": box,
                "difficult": 1 if difficult else 0,
            }
        )
    return {"width": width, "height": height, "objects": objects}


def _find_image(root: Path, stem: str) -> Path:
    jpg = root / "JPEGImages" / f"{stem}.jpg"
    if jpg.is_file():
        return jpg
    for ext in _IMAGE_EXTS:
        p = root / "JPEGImages" / f"{stem}{ext}"
        if p.is_file():
            return p
    return jpg


def split_ids(root: Path, split: str, limit: int | None = None) -> tuple[Path, list[str]]:
    """``(list file, image ids)`` of ``ImageSets/Main/<split>.txt``, the first ``limit`` only.

    Raises:
        DatasetError: the list is missing (names the splits that exist) or empty.
    """
    list_path = root / "ImageSets" / "Main" / f"{split}.txt"
    if not list_path.is_file():
        have = available_splits(root)
        raise DatasetError(
            f"{list_path}: split list not found (splits here: {', '.join(have) or 'none'}); "
            "choose others with --splits, or check --source points at the VOC2007 folder"
        )
    ids = read_id_list(list_path)
    if not ids:
        raise DatasetError(
            f"{list_path}: the split list is empty; add image ids (one per "
            "line) or drop this split from --splits"
        )
    return list_path, ids if limit is None else ids[: int(limit)]


def _image_labels(
    stem: str, ann: dict, class_labels: dict[str, set[str]] | None, data: SplitData, lists: Path
) -> list[int]:
    """An image's category ids: from the per-class lists when present, else its XML objects."""
    if class_labels is None:
        return sorted({o["category_id"] for o in ann["objects"]})
    if stem not in class_labels:
        raise BadItem(
            lists / f"{data.classes[0]}_{data.name}.txt",
            f"image {stem} is missing from the per-class label lists",
        )
    cat_of = {c: i + 1 for i, c in enumerate(data.classes)}
    return sorted(cat_of[c] for c in class_labels[stem])


def _read_item(
    root: Path, stem: str, img_id: int, class_labels: dict | None, data: SplitData, lists: Path
) -> tuple[dict, list[dict]]:
    """One image's split entry and its eval-only boxes (COCO xywh). Raises BadItem."""
    ann = parse_voc_xml(root / "Annotations" / f"{stem}.xml", data.classes)
    img_path = _find_image(root, stem)
    width, height = image_size(img_path)
    if ann["width"] is not None and (ann["width"], ann["height"]) != (width, height):
        raise BadItem(
            img_path,
            f"image is {width}x{height} but its XML says {ann['width']}x{ann['height']}",
        )
    image = {
        "id": img_id,
        "file_name": img_path.relative_to(root).as_posix(),
        "width": width,
        "height": height,
        "labels": _image_labels(stem, ann, class_labels, data, lists),
    }
    boxes = []
    for o in ann["objects"]:
        x1, y1, x2, y2 = o["bbox"]
        boxes.append(
            {
                "image_id": img_id,
                "category_id": o["category_id"],
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "difficult": o["difficult"],
            }
        )
    return image, boxes


def load_voc_split(
    root: str | os.PathLike,
    split: str,
    *,
    classes: Sequence[str] = VOC_CLASSES,
    limit: int | None = None,
    skip_bad: bool = False,
    format_name: str = "voc",
    progress: bool | None = None,
) -> SplitData:
    """Read one split of a VOC-style folder.

    Args:
        root: the ``VOC2007`` folder (holding ``JPEGImages``, ``Annotations``, ``ImageSets``).
        split: list name under ``ImageSets/Main``.
        classes: class names in category-id order (id = index + 1).
        limit: keep only the first ``limit`` ids of the split list.
        skip_bad: skip (and record) bad images instead of raising.
        progress: show a progress bar (a line every 10 % when not on a terminal) (default: when the split has over 500 images).

    Returns:
        the split; ``annotations`` hold the XML boxes (COCO xywh, 0-based) with ``difficult``.

    Raises:
        DatasetError: missing/empty split list, or a bad item without ``skip_bad``.
    """
    from wsod.utils.progress import progress

    root = Path(root).resolve()
    list_path, ids = split_ids(root, split, limit)
    class_labels, label_files = read_class_lists(root, split, classes)
    data = SplitData(
        name=split,
        data_root=root,
        classes=list(classes),
        format=format_name,
        inputs=[str(list_path), *label_files],
    )
    show = progress if progress is not None else len(ids) > 500
    seen: set[int] = set()
    for n, stem in enumerate(progress(ids, desc=f"data {split}", unit="img", disable=not show), 1):
        try:
            img_id = image_id_of(stem, n)
            if img_id in seen:
                raise BadItem(list_path, f"image id {stem} is listed twice")
            image, boxes = _read_item(root, stem, img_id, class_labels, data, list_path.parent)
        except BadItem as e:
            handle_bad(data, stem, e, skip_bad)
            continue
        seen.add(img_id)
        data.images.append(image)
        data.annotations.extend(boxes)
    return data
