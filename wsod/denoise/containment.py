"""Containment filter (SoS-WSOD's pseudo ground-truth filtering, PGF).

WSOD detectors love discriminative parts: a head box inside the person box. A box is dropped
when ``intersection / own area >= thr`` with a box of the same class that ranks above it (higher
score, or equal score and earlier in the input). Every box is compared with all boxes ranked
above it, dropped or not (one vectorised pass, no order dependence). The top box of a class is
never dropped, so each class keeps at least one box. Zero-area boxes count as not contained.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from wsod.denoise.common import class_rank, group_chunks, group_keys, pair_iou, ranked_pairs, take
from wsod.denoise.registry import register_strategy


@register_strategy("containment")
def containment(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    thr: float = 0.85,
    exempt: Iterable[int] = (),
) -> dict:
    """Drop same-class boxes mostly contained in a higher-or-equal scoring box.

    Args:
        thr: containment ratio (intersection / area of the inner box) at which a box is dropped.
        exempt: category ids never filtered (classes whose instances really do nest, e.g. a
            person in front of a person). The chain builder turns class names into ids.
    """
    keys = group_keys(dets)
    keep = np.ones(len(keys), bool)
    sel = ~np.isin(dets["labels"], np.asarray(list(exempt), np.int64))
    idx = np.flatnonzero(sel)
    k, boxes = keys[idx], dets["bboxes"][idx]
    rank = class_rank(k, dets["scores"][idx])
    for part in group_chunks(k):
        lo, hi = ranked_pairs(k[part], rank[part])
        b = boxes[part]
        inter, _, area_lo = pair_iou(b[lo], b[hi])
        ratio = np.divide(inter, area_lo, out=np.zeros_like(inter), where=area_lo > 0)
        keep[idx[part[np.unique(lo[ratio >= thr])]]] = False
    return take(dets, keep)
