"""Weighted box fusion of overlapping same-class boxes.

Clusters are formed greedily like NMS (the weighted-NMS variant of WBF): boxes are visited in
rank order; a box not yet in a cluster seeds one, which takes every later unclustered box with
IoU > ``thr`` to the seed (exactly the boxes greedy NMS would suppress with it). The cluster
becomes one box whose corners are the score-weighted mean of its members' corners (plain mean
if all member scores are <= 0); its score is the members' max (``score='max'``, = the seed's,
keeps the ranking of top boxes) or mean (``score='mean'``, as in single-model WBF). Other
per-box fields (``raw_scores``, ``weights``) come from the seed.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, greedy_nms_groups, group_keys, take
from wsod.denoise.registry import register_strategy


@register_strategy("wbf")
def wbf(
    dets: dict, *, image_labels: np.ndarray, width, height, thr: float = 0.55, score: str = "max"
) -> dict:
    """Fuse same-class boxes overlapping with IoU > ``thr`` into one box per cluster."""
    if score not in ("max", "mean"):
        raise ValueError(f"wbf: score must be 'max' or 'mean', got {score!r}")
    n = len(dets["scores"])
    if n == 0:
        return take(dets, np.zeros(0, np.int64))
    keys = group_keys(dets)
    s, b = dets["scores"], dets["bboxes"]
    keep, owner = greedy_nms_groups(b, keys, class_rank(keys, s), thr)
    w = np.clip(s, 0, None)
    sum_w = np.bincount(owner, w, minlength=n)
    count = np.bincount(owner, minlength=n).astype(np.float64)
    fused = np.empty((n, 4))
    for c in range(4):
        by_w = np.bincount(owner, w * b[:, c], minlength=n)
        mean = np.bincount(owner, b[:, c], minlength=n)
        fused[:, c] = np.where(
            sum_w > 0, by_w / np.where(sum_w > 0, sum_w, 1), mean / np.maximum(count, 1)
        )
    out = take(dets, keep)
    out["bboxes"] = fused[keep]
    if score == "mean":
        out["scores"] = (np.bincount(owner, s, minlength=n) / np.maximum(count, 1))[keep]
    return out
