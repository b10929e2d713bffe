"""Per-box training weight for the strong stage (written as ``weight`` in the pseudo labels).

``mode='score'``: the current score clipped to [0, 1]; ``'minmax'``: the current scores min-max
normalised over the image (all 1.0 when they are equal); ``'one'``: 1.0. The result is clipped
from below at ``min_weight`` so no pseudo box is ignored completely.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import image_index
from wsod.denoise.normalize import minmax_scale
from wsod.denoise.registry import register_strategy


@register_strategy("weight")
def weight(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    mode: str = "minmax",
    min_weight: float = 0.1,
) -> dict:
    """Write ``weights`` (N,) in [min_weight, 1] from the scores."""
    s = dets["scores"]
    if mode == "score":
        w = s.clip(0, 1)
    elif mode == "minmax":
        w = minmax_scale(image_index(dets), s)
    elif mode == "one":
        w = np.ones_like(s)
    else:
        raise ValueError(f"weight: mode must be 'score', 'minmax' or 'one', got {mode!r}")
    out = dict(dets)
    out["weights"] = np.clip(w, min_weight, 1.0)
    return out
