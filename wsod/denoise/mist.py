"""Multiple-instance self-training mining (MIST, Ren et al. CVPR 2020).

Per class: take the top ``p`` fraction of boxes by score (``ceil(p * n)``, at least one), then
walk them in rank order and keep a box only if its IoU with every kept box is below ``thr``.
The class's top box is always kept. Defaults follow the paper (p = 15 %, IoU threshold 0.2)
where boxes are proposals; on a detector's post-NMS output a larger ``p`` is reasonable.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import class_rank, greedy_nms_groups, group_keys, group_sizes, take
from wsod.denoise.registry import register_strategy


@register_strategy("mist")
def mist(
    dets: dict, *, image_labels: np.ndarray, width, height, p: float = 0.15, thr: float = 0.2
) -> dict:
    """MIST mining: top ``p`` fraction per class, then keep boxes with IoU < ``thr`` to all kept."""
    if not 0 < p <= 1:
        raise ValueError(f"mist: p must be in (0, 1], got {p}")
    keys = group_keys(dets)
    rank = class_rank(keys, dets["scores"])
    n_top = np.maximum(1, np.ceil(p * group_sizes(keys) - 1e-9)).astype(np.int64)
    cand = np.flatnonzero(rank < n_top)
    keep, _ = greedy_nms_groups(dets["bboxes"][cand], keys[cand], rank[cand], thr, inclusive=True)
    return take(dets, cand[keep])
