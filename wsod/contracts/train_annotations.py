"""``strong/train_annotations.json``: the boxes the strong stage trains on, and their weights."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from wsod.utils.io import read_json

from .core import fail, validate_gt


# --------------------------------------------------------------------------- strong stage's training boxes
# (box weights and ``strong/train_annotations.json``; kept together at the end of the module)
def box_weight(ann: Mapping, *, fully_supervised: bool = False) -> float:
    """The training weight of one box: its ``weight``; else, for a pseudo label, its
    ``score``; else 1.0. Real boxes (``fully_supervised``) weigh 1.0 unless they say otherwise.

    The one definition used where training annotations are written (the strong stage); no
    strong config trains on it (the box-weighted strong config and its modules, used by no
    pipeline, were removed; the weight stays in the file for a detector that reads it).
    """
    if "weight" in ann and ann["weight"] is not None:
        return float(ann["weight"])
    if not fully_supervised and ann.get("score") is not None:
        return float(ann["score"])
    return 1.0


TRAIN_ANNOTATION_KEYS = (
    "id",
    "image_id",
    "category_id",
    "bbox",
    "area",
    "iscrowd",
    "score",
    "weight",
)
"""Keys of every annotation in the strong stage's ``train_annotations.json``."""


def validate_train_annotations(data: Any, where: str = "training annotations") -> dict:
    """Check the strong stage's ``[fsd_]train_annotations.json`` (what mmdet's ``CocoDataset``
    trains on): a COCO instances file (:func:`validate_gt`) whose images have ``id,
    file_name, width, height``, whose categories are ids ``1..K``, and whose annotations have
    unique ids and :data:`TRAIN_ANNOTATION_KEYS` with ``area = w * h``, ``iscrowd`` 0/1 and
    finite ``score`` and ``weight >= 0``. Returns it unchanged."""
    validate_gt(data, where)
    for im in data["images"]:
        missing = [k for k in ("id", "file_name", "width", "height") if k not in im]
        if missing:
            fail(where, f"image {im.get('id')} lacks {missing}; rerun `wsod strong`")
    ids = sorted(int(c["id"]) for c in data["categories"])
    if ids != list(range(1, len(ids) + 1)):
        fail(where, f"category ids must be 1..K, got {ids}; regenerate the split")
    seen: set = set()
    for a in data["annotations"]:
        missing = [k for k in TRAIN_ANNOTATION_KEYS if k not in a]
        if missing:
            fail(where, f"annotation {a.get('id')} lacks {missing}; rerun `wsod strong`")
        if a["id"] in seen:
            fail(where, f"duplicate annotation id {a['id']}")
        seen.add(a["id"])
        w, h = (float(v) for v in a["bbox"][2:])
        if not np.isclose(float(a["area"]), w * h, rtol=1e-6, atol=1e-6):
            fail(where, f"annotation {a['id']}: area {a['area']} != w * h = {w * h}")
        if a["iscrowd"] not in (0, 1):
            fail(where, f"annotation {a['id']}: iscrowd must be 0 or 1, got {a['iscrowd']!r}")
        score, weight = float(a["score"]), float(a["weight"])
        if not (np.isfinite(score) and np.isfinite(weight) and weight >= 0):
            fail(
                where,
                f"annotation {a['id']}: score {score} / weight {weight} (want finite, weight >= 0)",
            )
    return dict(data)


def load_train_annotations(path: str | os.PathLike) -> dict:
    """Read and validate a strong stage's ``train_annotations.json``."""
    return validate_train_annotations(read_json(path), where=str(path))
