"""Pseudo labels (or real boxes) as the COCO instances mmdet's ``CocoDataset`` trains on: the
strong stage's training annotations (validated by :mod:`wsod.contracts.train_annotations`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from wsod import contracts
from wsod.utils.io import read_json


def build_train_annotations(data: Mapping, *, fully_supervised: bool = False) -> dict:
    """Normalise pseudo labels (or real boxes) into what mmdet's ``CocoDataset`` trains on.

    Args:
        data: COCO instances dict (``images``, ``categories``, ``annotations`` with ``bbox``
            xywh and, for pseudo labels, ``score`` and optionally ``weight``).
        fully_supervised: ``data`` holds real boxes (``weight`` 1). Either way a box that
            :func:`wsod.contracts.is_ignored` (``difficult`` or ``iscrowd``) becomes ``iscrowd``
            1: mmdet ignores it in training, as its VOC loader does.

    Returns:
        COCO instances dict: images ``{id, file_name, width, height}``, categories sorted by
        id, annotations ``{id (1..N), image_id, category_id, bbox, area = w*h, iscrowd, score,
        weight}`` (``score`` default 1.0, ``weight``: :func:`wsod.contracts.box_weight`).
    """
    images = [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in data["images"]]
    anns = []
    for i, a in enumerate(data["annotations"], start=1):
        x, y, w, h = (float(v) for v in a["bbox"])
        crowd = int(contracts.is_ignored(a))
        anns.append(
            {
                "id": i,
                "image_id": a["image_id"],
                "category_id": a["category_id"],
                "bbox": [x, y, w, h],
                "area": w * h,
                "iscrowd": crowd,
                "score": float(a.get("score", 1.0)),
                "weight": contracts.box_weight(a, fully_supervised=fully_supervised),
            }
        )
    cats = sorted(
        ({"id": c["id"], "name": c["name"]} for c in data["categories"]), key=lambda c: c["id"]
    )
    return {
        "info": dict(data.get("info", {})),
        "images": images,
        "categories": cats,
        "annotations": anns,
    }


def resolve_root(root: str | os.PathLike, ref_file: str | os.PathLike) -> Path:
    """A ``data_root`` named in ``ref_file`` (relative: as :func:`wsod.contracts.resolve_data_root`)."""
    return contracts.resolve_data_root({"info": {"data_root": str(root)}}, ref_file)


def train_data_root(
    data: Mapping, path: str | os.PathLike, data_root: str | os.PathLike | None
) -> Path:
    """Where the training file's images are: ``data_root`` when given, else its
    ``info.data_root``, else that of the split its ``info.split_file`` names.

    Raises:
        ValueError: none of them says.
    """
    if data_root is not None:
        return Path(data_root)
    info = data.get("info") or {}
    if info.get("data_root"):
        return resolve_root(info["data_root"], path)
    split_path = _split_file(info, path)
    if split_path is not None:
        split = contracts.load_split(split_path)
        return resolve_root(split["info"]["data_root"], split_path)
    raise ValueError(
        f"{path}: no info.data_root (nor info.split_file) says where the "
        "images are; pass data_root= (--data-root DIR)"
    )


def _split_file(info: Mapping, path: str | os.PathLike) -> Path | None:
    """The training file's ``info.split_file`` (relative: to the cwd, else to its folder)."""
    if not info.get("split_file"):
        return None
    split_path = Path(info["split_file"])
    if not split_path.is_absolute() and not split_path.is_file():
        split_path = Path(path).parent / split_path
    return split_path


class TrainingFileError(ValueError):
    """A training file the strong stage cannot train on; the message names it and the fix."""


def check_categories(cats: Sequence[Mapping], where: str) -> list[str]:
    """The class names of ``cats``, whose ids must be ``1..K`` (:class:`TrainingFileError`)."""
    ids = [int(c["id"]) for c in sorted(cats, key=lambda c: c["id"])]
    if ids != list(range(1, len(ids) + 1)):
        raise TrainingFileError(
            f"{where}: category ids must be 1..K (got {ids}); regenerate the split with `wsod data`"
        )
    return contracts.category_names({"categories": list(cats)})


def read_training_boxes(
    train_file: Path, fully: bool, data_root: str | os.PathLike | None
) -> tuple[dict, list[str], Path]:
    """The strong stage's training annotations (:func:`build_train_annotations`), classes and
    image root, from pseudo labels or (``fully``: the reference) a split's real boxes.

    Raises:
        TrainingFileError: the message names the file and the fix.
    """
    if fully:
        data = contracts.validate_gt(read_json(train_file), where=str(train_file))
        info = data.get("info") or {}
        if info.get("has_boxes") is False or info.get("boxed_images") is not None:
            raise TrainingFileError(
                f"{train_file}: the fully supervised reference needs boxes on every train image "
                "and this data has them for some or none (tags-only data); set fsd = 0 in the "
                "pipeline or run make with FSD=0"
            )
    else:
        data = read_json(train_file)
        marks = contracts.ground_truth_marks(data) if isinstance(data, Mapping) else []
        if marks:
            raise TrainingFileError(
                f"{train_file}: this is a split's eval-only ground truth ({'; '.join(marks)}), "
                "not pseudo labels; train on the de-noise stage's output (make denoise), or give "
                "real boxes as the labelled reference with --fully-supervised-gt (make fsd)"
            )
        data = contracts.validate_pseudo_labels(data, where=str(train_file))
    classes = check_categories(data["categories"], str(train_file))
    try:
        root = train_data_root(data, train_file, data_root).resolve()
    except ValueError as e:
        raise TrainingFileError(str(e)) from e
    if not root.is_dir():
        raise TrainingFileError(f"{train_file}: image folder {root} not found; pass --data-root")
    train_ann = build_train_annotations(data, fully_supervised=fully)
    if not train_ann["annotations"]:
        raise TrainingFileError(f"{train_file}: no boxes to train on; check the de-noise stage")
    return train_ann, classes, root
