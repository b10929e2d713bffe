"""Data stage: a dataset on disk -> the split files the rest of the pipeline reads.

Inputs (``format``):
    ``voc``: a VOC2007-style folder (``wsod.datasets.voc``); any split with
    ``ImageSets/Main/<split>.txt``. ``csv`` / ``coco``: tagged images described by a CSV or a
    COCO json; ``splits`` then name the CSV/json files (``wsod.datasets.custom``). ``demo``: a
    folder where the synthetic demo dataset is generated (once per seed and size) and then read
    with the VOC loader (``wsod.datasets.demo``).

Outputs, per split, in ``out_dir`` (each atomic, with a ``.meta.json`` sidecar):
    ``<split>.json``: the weak-label split (``wsod.contracts.validate_split``): ``images`` [{id,
    file_name (relative to ``info.data_root``), width, height, labels (sorted category ids)}],
    ``categories`` (ids 1..K in class order), ``info`` {data_root, split, format, num_images,
    num_skipped, image_sizes}. Width and height are the image's as displayed (EXIF orientation
    applied: ``image_sizes`` = ``'displayed'``, the rule of :mod:`wsod.contracts`). **No boxes**: this is the only dataset file the training side reads.
    ``<split>_gt.json``: eval-only COCO instances (``annotations`` with ``bbox`` xywh 0-based,
    ``area``, ``iscrowd`` 0, ``difficult`` 0/1; ``info.has_boxes`` false for tags-only data,
    ``info.boxed_images`` the ids of the images with boxes when ``--boxes`` covers only some).
    Only evaluation and diagnostics may open it.
    ``<split>.skipped.json`` (only with ``skip_bad``): the items left out and why.

Invariants: every requested split is read and checked before anything is written, so bad input
raises (naming the file and the fix) without leaving a partial output; with ``skip_bad`` a bad
image is skipped and counted instead. Nothing here imports torch or mmdet.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from wsod import VOC_CLASSES, contracts
from wsod.datasets.base import DatasetError, SplitData
from wsod.utils.io import write_json_artifact

FORMATS = ("voc", "csv", "coco", "demo")


def load_splits(
    source: str | os.PathLike,
    *,
    format: str = "voc",
    splits: Sequence[str] = ("train", "val"),
    limit: int | None = None,
    skip_bad: bool = False,
    seed: int = 0,
    num_images=None,
    classes: Sequence[str] | None = None,
    boxes: str | os.PathLike | None = None,
) -> list[SplitData]:
    """Read every requested split into memory (nothing is written). Arguments as in :func:`run`."""
    if format not in FORMATS:
        raise DatasetError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if isinstance(splits, str):
        splits = [splits]
    if not splits:
        raise DatasetError("no splits given; name at least one with --splits")
    if classes is not None and isinstance(classes, str):
        classes = [c.strip() for c in classes.split(",") if c.strip()]
    source = Path(source)
    if format != "demo" and not source.exists():
        raise DatasetError(
            f"{source}: dataset source not found; check --source"
            + (" (run `make voc07` to download VOC 2007)" if format == "voc" else "")
        )
    if boxes is not None and format != "csv":
        raise DatasetError(
            "--boxes applies to the csv format only (VOC boxes come from Annotations/, COCO "
            "boxes from the json's annotations)"
        )
    opts = {"limit": limit, "skip_bad": skip_bad}
    if format in ("voc", "demo"):
        return _load_voc(source, format, list(splits), classes, seed, num_images, opts)
    if format == "csv":
        return _load_csv(source, list(splits), classes, boxes, opts)
    return _load_coco(source, list(splits), classes, opts)


def _load_voc(source: Path, format: str, splits, classes, seed, num_images, opts) -> list:
    from wsod.datasets.voc import load_voc_split

    cls = list(classes) if classes else list(VOC_CLASSES)
    if format == "demo":
        from wsod.datasets.demo import DEMO_CLASSES, ensure_demo_dataset

        source = ensure_demo_dataset(source, seed=seed, num_images=num_images)
        cls = list(DEMO_CLASSES)
    elif not (source / "ImageSets").is_dir() and (source / "VOC2007" / "ImageSets").is_dir():
        source = source / "VOC2007"  # a VOCdevkit folder was given: use its VOC2007
    return [load_voc_split(source, s, classes=cls, format_name=format, **opts) for s in splits]


def _load_csv(source: Path, splits, classes, boxes, opts) -> list:
    from wsod.datasets import custom

    files = [custom.resolve_split_file(source.resolve(), s, ".csv") for s in splits]
    if classes:
        custom.check_case_duplicates(list(classes), "--classes")
    cls = list(classes) if classes else custom.csv_classes(files)
    return [custom.load_csv_split(source, str(f), classes=cls, boxes=boxes, **opts) for f in files]


def _load_coco(source: Path, splits, classes, opts) -> list:
    from wsod.datasets import coco_files

    pairs = coco_files.coco_split_files(source, splits)
    cls = list(classes) if classes else coco_files.coco_classes([p for _, p in pairs])
    return [coco_files.load_coco_split(source, name, p, classes=cls, **opts) for name, p in pairs]


def build_split_files(data: SplitData) -> tuple[dict, dict]:
    """``(split json, gt json)`` of one split, validated against ``wsod.contracts``."""
    categories = [{"id": i + 1, "name": c} for i, c in enumerate(data.classes)]
    where = f"split '{data.name}' of {data.data_root}"
    if not data.images:
        raise DatasetError(
            f"{data.data_root}: split '{data.name}' has no usable images left "
            f"({len(data.skipped)} skipped); fix the inputs"
        )
    info = {
        "data_root": str(data.data_root),
        "split": data.name,
        "format": data.format,
        "num_images": len(data.images),
        "num_skipped": len(data.skipped),
        "image_sizes": contracts.IMAGE_SIZES,
    }
    split = {"info": info, "images": data.images, "categories": categories}
    anns = []
    for k, a in enumerate(data.annotations, 1):
        x, y, w, h = (float(v) for v in a["bbox"])
        anns.append(
            {
                "id": k,
                "image_id": a["image_id"],
                "category_id": a["category_id"],
                "bbox": [x, y, w, h],
                "area": w * h,
                "iscrowd": 0,
                "difficult": int(a.get("difficult", 0)),
            }
        )
    gt = {
        "info": {
            **info,
            "eval_only": True,
            "has_boxes": data.has_boxes,
            **({} if data.boxed_images is None else {"boxed_images": data.boxed_images}),
            "description": "ground-truth boxes for evaluation only; training stages must "
            "never read this file",
        },
        "images": [
            {k: im[k] for k in ("id", "file_name", "width", "height")} for im in data.images
        ],
        "categories": categories,
        "annotations": anns,
    }
    contracts.validate_split(split, where)
    contracts.validate_gt(gt, where + " (gt)")
    return split, gt


def run(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    format: str = "voc",
    splits: Sequence[str] = ("train", "val"),
    limit: int | None = None,
    skip_bad: bool = False,
    seed: int = 0,
    num_images=None,
    classes: Sequence[str] | None = None,
    boxes: str | os.PathLike | None = None,
) -> dict:
    """Turn a dataset on disk into ``<split>.json`` + ``<split>_gt.json`` in ``out_dir``.

    Args:
        source: dataset folder (VOC2007 folder or the VOCdevkit above it, image folder for
            csv, json or folder for coco, target folder for demo).
        out_dir: output folder (created).
        format: ``voc``, ``csv``, ``coco`` or ``demo``.
        splits: split names (voc/demo) or CSV/json files (csv/coco).
        limit: keep the first ``limit`` images of each split list (tests, CI).
        skip_bad: skip and count bad items instead of raising.
        seed: demo generator seed (other formats ignore it).
        num_images: demo size (int = train images, val = a quarter; or {'train', 'val'}).
        classes: class names in category-id order (default: VOC's 20, the CSV's sorted names
            or the COCO json's categories; demo uses its own five).
        boxes: csv only: eval-only boxes (COCO json or folder of VOC XML files).

    Returns:
        ``{split: {"images", "objects", "skipped", "split_file", "gt_file",
        "images_per_class"}}``.

    Raises:
        DatasetError: bad input (message names the file and the fix); nothing is written then.
    """
    started = time.time()
    options = dict(
        format=format,
        splits=list(splits) if not isinstance(splits, str) else [splits],
        limit=limit,
        skip_bad=skip_bad,
        seed=seed,
        num_images=num_images,
        classes=classes,
        boxes=None if boxes is None else str(boxes),
    )
    config = {"source": str(source), **options}
    loaded = load_splits(source, **{**options, "boxes": boxes})
    names = [d.name for d in loaded]
    if len(set(names)) != len(names):
        raise DatasetError(f"split names repeat: {names}; give each split once")
    from wsod.datasets.custom import check_splits

    for line in check_splits(loaded):
        warnings.warn(line, stacklevel=2)
    built = [(d, *build_split_files(d)) for d in loaded]  # validate all before writing any
    summary = {}
    for data, split, gt in built:
        meta = dict(stage="data", config=config, inputs=data.inputs, seed=seed, started=started)
        summary[data.name] = write_split_files(Path(out_dir), data, split, gt, skip_bad, meta)
    return summary


def write_split_files(
    out_dir: Path, data: SplitData, split: dict, gt: dict, skip_bad: bool, meta: dict
) -> dict:
    """Write one split's files (gt, skipped list, then the split: the make target last).

    Returns:
        ``{"images", "objects", "skipped", "split_file", "gt_file", "images_per_class"}``.
    """
    split_file = out_dir / f"{data.name}.json"
    gt_file = out_dir / f"{data.name}_gt.json"
    skipped_file = out_dir / f"{data.name}.skipped.json"
    write_json_artifact(gt_file, gt, **meta)
    if skip_bad:
        write_json_artifact(
            skipped_file,
            {"split": data.name, "num_skipped": len(data.skipped), "skipped": data.skipped},
            indent=1,
            **meta,
        )
    else:
        skipped_file.unlink(missing_ok=True)
        Path(f"{skipped_file}.meta.json").unlink(missing_ok=True)
    write_json_artifact(split_file, split, **meta)
    return {
        "images": len(data.images),
        "objects": len(gt["annotations"]),
        "skipped": len(data.skipped),
        "split_file": str(split_file),
        "gt_file": str(gt_file),
        "images_per_class": images_per_class(data),
    }


def images_per_class(data: SplitData) -> dict[str, int]:
    """``{class name: number of images labelled with it}``, in category-id order."""
    counts = Counter(c for im in data.images for c in im["labels"])
    return {name: counts[k] for k, name in enumerate(data.classes, 1)}
