"""Class-wise non-maximum suppression (mmcv convention: suppress when IoU > ``thr``)."""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, greedy_nms_groups, group_keys, take
from wsod.denoise.registry import register_strategy


@register_strategy("nms")
def nms(dets: dict, *, image_labels: np.ndarray, width, height, thr: float = 0.5) -> dict:
    """Greedy NMS within each class; among identical boxes the first in rank order survives."""
    keys = group_keys(dets)
    keep, _ = greedy_nms_groups(dets["bboxes"], keys, class_rank(keys, dets["scores"]), thr)
    return take(dets, keep)
