"""Pseudo ground-truth filtering (PGF) of SoS-WSOD (Sui et al., CVPR 2022), several boxes a class.

Per labelled class of an image (label consistency runs first):

1. keep the class's top box, and every other box whose score is ``>= keep_thr``. The threshold
   is **absolute** on the scores the step receives, as in the paper's released ``tools/pgf.py``
   (``--t-keep 0.2`` against the detector's score). Put ``minmax_normalize`` before it for
   WeakSAM's image-relative variant (its released code rescales per class of the image and
   keeps ``>= 0.5``).
2. drop a kept box when ``>= contain_thr`` of its area lies inside *another kept box* of its
   class, whatever the two boxes' ranks (the released rule: parts inside a whole go, even the
   top box when it is a part of a lower-scoring but kept whole). Classes in ``exempt`` skip this
   test: classes whose objects really do nest or overlap in crowds (the released VOC list,
   :data:`SOS_NESTING_CLASSES`).
3. a class that step 2 emptied (boxes that contain one another, e.g. identical boxes) keeps its
   top box, so every labelled class with detections keeps at least one box (the released code
   can leave such a class with none).

Zero-area boxes count as not contained.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from wsod.denoise.common import (
    class_rank,
    classes_with,
    group_chunks,
    group_keys,
    pair_iou,
    ranked_pairs,
    take,
)
from wsod.denoise.registry import register_strategy

#: VOC classes SoS-WSOD's released PGF exempts from the containment test (``diff_classes``).
SOS_NESTING_CLASSES = ("bottle", "bus", "car", "chair", "cow", "pottedplant", "sheep")


def contained_in_another(keys: np.ndarray, boxes: np.ndarray, thr: float) -> np.ndarray:
    """(N,) bool: the box has ``>= thr`` of its area inside another box of its group.

    Args:
        keys: (N,) group keys; boxes: (N,4) x1y1x2y2.
    """
    hit = np.zeros(len(keys), bool)
    rank = class_rank(keys, np.zeros(len(keys)))  # any order: every pair is looked at once
    for part in group_chunks(keys):
        lo, hi = ranked_pairs(keys[part], rank[part])
        b = boxes[part]
        inter, _, area_lo = pair_iou(b[lo], b[hi])
        wh_hi = np.clip(b[hi, 2:] - b[hi, :2], 0, None)
        area_hi = wh_hi[:, 0] * wh_hi[:, 1]
        lo_in = np.divide(inter, area_lo, out=np.zeros_like(inter), where=area_lo > 0) >= thr
        hi_in = np.divide(inter, area_hi, out=np.zeros_like(inter), where=area_hi > 0) >= thr
        hit[part[np.unique(np.r_[lo[lo_in], hi[hi_in]])]] = True
    return hit


@register_strategy("pgf")
def pgf(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    keep_thr: float = 0.2,
    contain_thr: float = 0.85,
    exempt: Iterable[int] = (),
) -> dict:
    """SoS-WSOD's pseudo ground-truth filtering (see the module docstring).

    Args:
        keep_thr: boxes after the top one of their class are kept when ``score >= keep_thr``
            (absolute score).
        contain_thr: a kept box with this share of its area inside another kept box of its
            class is dropped.
        exempt: category ids spared the containment test; the chain builder turns class names
            into ids (SoS-WSOD on VOC: :data:`SOS_NESTING_CLASSES`).
    """
    if not 0 < contain_thr <= 1:
        raise ValueError(f"pgf: contain_thr must be in (0, 1], got {contain_thr}")
    keys = group_keys(dets)
    top = class_rank(keys, dets["scores"]) == 0
    kept = np.flatnonzero(top | (dets["scores"] >= keep_thr))
    k = keys[kept]
    tested = ~np.isin(dets["labels"][kept], np.asarray(list(exempt), np.int64))
    inside = np.zeros(len(kept), bool)
    inside[tested] = contained_in_another(k[tested], dets["bboxes"][kept][tested], contain_thr)
    survive = ~inside
    survive |= top[kept] & ~classes_with(k, survive)  # an emptied class keeps its top box
    return take(dets, kept[survive])
