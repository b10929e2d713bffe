"""Image-label consistency: keep only boxes whose class is among the image's labels.

Weak supervision tells us which classes are present; a box of any other class is wrong by
construction. The chain always runs this first (see :mod:`wsod.denoise.chain`).
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import group_keys, labelled_keys, take
from wsod.denoise.registry import register_strategy


@register_strategy("label_consistency")
def label_consistency(dets: dict, *, image_labels: np.ndarray, width, height) -> dict:
    """Drop boxes of classes not in ``image_labels`` ((L,) ids, or (K,2) rows for a batch)."""
    keys = group_keys(dets)
    allowed = np.unique(labelled_keys(image_labels))
    if len(allowed) == 0:
        return take(dets, np.zeros(len(keys), bool))
    pos = np.clip(np.searchsorted(allowed, keys), 0, len(allowed) - 1)
    return take(dets, allowed[pos] == keys)
