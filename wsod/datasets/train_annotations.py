"""Pseudo labels (or real boxes) as the COCO instances mmdet's ``CocoDataset`` trains on: the
strong stage's training annotations (validated by :mod:`wsod.contracts.train_annotations`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from wsod import contracts


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
