"""Read the eval-only ``<split>_gt.json`` (COCO instances + ``difficult``) into per-image arrays.

This module and the data stage are the only code that opens ground-truth boxes. Training-side
stages (proposals, weak, denoise, strong) must never import it; evaluation and diagnostics
(CorLoc, pseudo-label quality) may, and say so in their outputs.

Boxes come out as float ``x1, y1, x2, y2`` 0-based pixels (files hold COCO ``x, y, w, h``).
A box is *ignored* (VOC "difficult") when its annotation has ``difficult`` or ``iscrowd`` set:
the one rule, :func:`wsod.contracts.is_ignored`, holds for VOC AP, COCO AP and box precision
alike. :func:`gt_to_arrays` (flat rows) and :func:`gt_by_image` (per image) are the
ground-truth converters; detections are converted by :mod:`wsod.contracts`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from wsod.contracts import group_by_image, is_ignored, validate_gt, xywh_to_xyxy
from wsod.utils.io import read_json


def load_gt(path: str | os.PathLike) -> dict:
    """Read and validate an eval-only ground-truth file (COCO instances json)."""
    return validate_gt(read_json(path), where=str(path))


def gt_to_arrays(gt: Mapping) -> dict[str, np.ndarray]:
    """A COCO instances dict -> flat arrays, one row per box, in the file's order.

    Args:
        gt: COCO instances dict (``images``, ``annotations`` with ``bbox`` xywh, optional
            ``difficult`` / ``iscrowd``).

    Returns:
        ``{"image_ids": (M,) int64, "bboxes": (M,4) float64 x1y1x2y2, "labels": (M,) int64,
        "ignore": (M,) bool (:func:`wsod.contracts.is_ignored`), "image_set": (I,) int64 ids of
        every image of the file, boxes or not}``.
    """
    anns = gt["annotations"]
    return {
        "image_ids": np.array([a["image_id"] for a in anns], np.int64),
        "bboxes": xywh_to_xyxy(np.array([a["bbox"] for a in anns], np.float64)),
        "labels": np.array([a["category_id"] for a in anns], np.int64),
        "ignore": np.array([is_ignored(a) for a in anns], bool),
        "image_set": np.array([im["id"] for im in gt["images"]], np.int64),
    }


def gt_by_image(gt: Mapping) -> dict[int, dict[str, np.ndarray]]:
    """Group a COCO instances dict into arrays per image, for every image of the file.

    Args:
        gt: COCO instances dict (as :func:`gt_to_arrays`).

    Returns:
        ``{image_id: {"bboxes": (M,4) float64 x1y1x2y2, "labels": (M,) int64,
        "difficult": (M,) bool}}`` in the file's image order (``difficult`` is the ignore flag
        of :func:`wsod.contracts.is_ignored`, under the name that
        :func:`wsod.evaluation.voc.eval_voc` reads); images without boxes get empty arrays.
    """
    arrays = gt_to_arrays(gt)
    rows = {k: arrays[k] for k in ("image_ids", "bboxes", "labels")}
    rows["difficult"] = arrays["ignore"]
    grouped = group_by_image(rows)
    empty = {
        "bboxes": np.zeros((0, 4)),
        "labels": np.zeros(0, np.int64),
        "difficult": np.zeros(0, bool),
    }
    return {int(i): grouped.get(int(i), dict(empty)) for i in arrays["image_set"]}


def class_ids(gt: Mapping) -> list[int]:
    """Category ids of a COCO-style dict, sorted."""
    return sorted(int(c["id"]) for c in gt["categories"])


def class_names(gt: Mapping) -> dict[int, str]:
    """``{category_id: name}`` of a COCO-style dict."""
    return {int(c["id"]): str(c["name"]) for c in gt["categories"]}


def image_root(gt: Mapping, gt_path: str | os.PathLike | None = None) -> Path | None:
    """The folder that a file's ``file_name`` entries are relative to (``info.data_root``).

    A relative ``data_root`` is tried against the working directory first, then against the
    folder of ``gt_path``. Returns None when the file names no root.
    """
    root = (gt.get("info") or {}).get("data_root")
    if not root:
        return None
    root = Path(root)
    if root.is_absolute() or root.exists() or gt_path is None:
        return root
    alt = Path(gt_path).parent / root
    return alt if alt.exists() else root
