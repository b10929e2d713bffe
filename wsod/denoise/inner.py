"""Inner box: replace a class's top box by a confident, much smaller box lying inside it.

The CAM black box's top box is often too large: on VOC07 many train pseudo labels hold a whole
object plus context or several objects of the class
(docs/experiments/2026-12-03-why-retraining-does-not-help.md; this strategy measured:
docs/experiments/2026-12-03-inner-box.md). When the same class
also has a box that lies inside the top box (``intersection / its own area >= inside``), covers
at most ``max_area`` of the top box's area and still scores ``>= rel_score x`` the top score, the
detector itself says that the smaller box carries most of the evidence: this strategy moves the
top box to the highest-scoring such box (one step per call). The top box keeps its score (later
score-based steps, e.g. ``image_filter``, see the same confidence) and the inner box is removed,
so the group has no duplicate. Groups without a candidate are unchanged; the number of boxes
changes by one per replaced group. Run it before ``top1``.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, group_keys, pair_iou, take
from wsod.denoise.registry import register_strategy


@register_strategy("inner_box")
def inner_box(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    rel_score: float = 0.7,
    max_area: float = 0.5,
    inside: float = 0.8,
) -> dict:
    """Move each class's top box onto its best confident box inside it (see the module doc).

    Args:
        rel_score: a candidate must score at least this fraction of the top box's score.
        max_area: a candidate's area is at most this fraction of the top box's area.
        inside: a candidate's share of its own area that lies inside the top box.
    """
    for name, v in (("rel_score", rel_score), ("max_area", max_area), ("inside", inside)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"inner_box: {name} must be in [0, 1], got {v}")
    scores = dets["scores"]
    if len(scores) == 0:
        return dets
    keys = group_keys(dets)
    rank = class_rank(keys, scores)
    _, inv = np.unique(keys, return_inverse=True)
    tops = np.flatnonzero(rank == 0)
    top_of = np.empty(inv.max() + 1, np.int64)
    top_of[inv[tops]] = tops
    top = top_of[inv]  # (N,) index of each box's group top box

    boxes = dets["bboxes"]
    inter, _, area_cand = pair_iou(boxes, boxes[top])
    area_top = area_cand[top]
    share = np.divide(inter, area_cand, out=np.zeros_like(inter), where=area_cand > 0)
    cand = (
        (rank > 0)
        & (scores >= rel_score * scores[top])
        & (share >= inside)
        & (area_cand <= max_area * area_top)
        & (area_cand > 0)
    )
    if not cand.any():
        return dets
    # the best candidate of each group: the lowest rank among its candidates
    idx = np.flatnonzero(cand)
    idx = idx[np.lexsort((rank[idx], inv[idx]))]
    first = np.r_[True, inv[idx][1:] != inv[idx][:-1]]
    best = idx[first]
    out = dict(dets)
    out["bboxes"] = boxes.copy()
    out["bboxes"][top[best]] = boxes[best]
    keep = np.ones(len(scores), bool)
    keep[best] = False
    return take(out, keep)
