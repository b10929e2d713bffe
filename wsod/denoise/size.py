"""Size and aspect sanity filters relative to the image (never to ground-truth box sizes).

Boxes are first clipped to the image. A box with zero width or height is always dropped. With
``keep_top1`` a class that had a positive-area box but loses all its boxes to the filter keeps
its top-ranked positive-area box, so no labelled class is left without a pseudo box.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, classes_with, group_keys, image_sizes, take
from wsod.denoise.registry import register_strategy


@register_strategy("size_filter")
def size_filter(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    min_side: float = 0.0,
    min_area: float = 0.0,
    max_area: float = 1.0,
    max_aspect: float | None = None,
    clip: bool = True,
    keep_top1: bool = True,
) -> dict:
    """Drop boxes implausible for their image.

    Args:
        min_side: shortest box side as a fraction of the image's shorter side.
        min_area: box area as a fraction of the image area (lower bound).
        max_area: upper bound of the same fraction (1.0 = no bound).
        max_aspect: largest allowed ``max(w/h, h/w)`` (None = no bound).
        clip: clip boxes to ``[0, width] x [0, height]`` first (the clipped box is kept).
        keep_top1: fallback, see the module docstring.
    """
    out = dict(dets)
    W, H = image_sizes(dets, width, height)
    b = dets["bboxes"].copy()
    if clip and len(b):
        b[:, 0::2] = np.clip(b[:, 0::2], 0, W[:, None])
        b[:, 1::2] = np.clip(b[:, 1::2], 0, H[:, None])
        out["bboxes"] = b
    w = b[:, 2] - b[:, 0]
    h = b[:, 3] - b[:, 1]
    valid = (w > 0) & (h > 0)
    frac = w * h / (W * H)
    keep = valid & (np.minimum(w, h) >= min_side * np.minimum(W, H))
    keep &= (frac >= min_area) & (frac <= max_area)
    if max_aspect is not None:
        ratio = np.divide(
            np.maximum(w, h), np.minimum(w, h), out=np.full_like(w, np.inf), where=valid
        )
        keep &= ratio <= max_aspect
    if keep_top1 and len(keep):
        keys = group_keys(dets)
        rank = class_rank(keys, dets["scores"], valid=valid)
        keep |= (rank == 0) & valid & ~classes_with(keys, keep)
    return take(out, keep)
