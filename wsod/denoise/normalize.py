"""Per-image min-max score normalisation (WeakSAM's adaptive thresholds).

Detector scores differ in scale between images; rescaling each image's scores to [0, 1] makes a
later ``score_threshold`` relative to the image's best box. The detector's original scores are
kept in ``raw_scores`` (the pseudo labels' ``score`` field keeps them).
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import group_keys, image_index, segment_minmax
from wsod.denoise.registry import register_strategy


def minmax_scale(keys: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(N,) scores rescaled to [0, 1] within each segment of equal ``keys``; 1.0 where a segment's
    scores are all equal (including a single box)."""
    lo, hi = segment_minmax(keys, s)
    span = hi - lo
    return np.where(span > 0, (s - lo) / np.where(span > 0, span, 1), 1.0)


@register_strategy("minmax_normalize")
def minmax_normalize(
    dets: dict, *, image_labels: np.ndarray, width, height, per_class: bool = False
) -> dict:
    """Rescale scores to [0, 1] per image (or per class within the image with ``per_class``)."""
    out = dict(dets)
    if "raw_scores" not in out:
        out["raw_scores"] = dets["scores"].copy()
    keys = group_keys(dets) if per_class else image_index(dets)
    out["scores"] = minmax_scale(keys, dets["scores"])
    return out
