"""Score-based selection per labelled class: top-1, top-k, score threshold with top-1 fallback.

Top-1 per labelled class is the OICR/PCL retraining protocol. Ties are broken by the common
ranking rule (score descending, then input order), so exactly one box per class survives top-1
even among identical boxes.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, classes_with, group_keys, labelled_keys, take
from wsod.denoise.registry import register_strategy


@register_strategy("topk")
def topk(dets: dict, *, image_labels: np.ndarray, width, height, k: int = 1) -> dict:
    """Keep the ``k`` highest-scoring boxes of every class (fewer if the class has fewer)."""
    if k < 1:
        raise ValueError(f"topk: k must be >= 1, got {k}")
    return take(dets, class_rank(group_keys(dets), dets["scores"]) < k)


@register_strategy("top1")
def top1(dets: dict, *, image_labels: np.ndarray, width, height) -> dict:
    """Keep the single highest-scoring box of every class (OICR/PCL protocol)."""
    return take(dets, class_rank(group_keys(dets), dets["scores"]) == 0)


@register_strategy("score_threshold")
def score_threshold(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    thr: float = 0.5,
    fallback: bool = True,
) -> dict:
    """Keep boxes with ``score >= thr``.

    With ``fallback`` a labelled class whose boxes all score below ``thr`` keeps its top box, so
    no labelled class that has detections is left without a pseudo box.
    """
    scores = dets["scores"]
    keep = scores >= thr
    if fallback and len(scores):
        keys = group_keys(dets)
        labelled = np.isin(keys, labelled_keys(image_labels))
        keep |= (class_rank(keys, scores) == 0) & ~classes_with(keys, keep) & labelled
    return take(dets, keep)
