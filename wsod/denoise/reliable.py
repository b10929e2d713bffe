"""Labelled / unlabelled split for semi-supervised retraining: keep the most reliable images.

SoS-WSOD-style retraining learns from the images whose pseudo labels are trustworthy (the
labelled set) and treats the others as unlabelled (a teacher mines their boxes, restricted to
their image labels: projects/soft_teacher). ``reliable_images`` decides which is which: an
image's reliability is the score of its *least* certain labelled class (the best box of each
labelled class, then the minimum over the classes; a labelled class without a box makes the
image unreliable), as in ``image_filter``; instead of an absolute threshold, whose value depends
on the black box's calibration, it keeps the top ``fraction`` of the images by that reliability
and drops every box of the others. The strong stage's semi-supervised config then trains on the
images that still have boxes as labelled and on the rest as unlabelled. Scores only: never a
ground-truth box.
"""

from __future__ import annotations

import math

import numpy as np

from wsod.denoise.common import LABEL_SPAN, group_keys, image_index, labelled_keys, take
from wsod.denoise.registry import register_strategy


def image_reliability(dets: dict, image_labels: np.ndarray, n_images: int) -> np.ndarray:
    """(n_images,) the minimum over each image's labelled classes of the class's best score.

    -inf for an image with a labelled class without a box, or with no labels at all.
    """
    keys = group_keys(dets)
    wanted = np.unique(labelled_keys(image_labels))
    best = np.full(len(wanted), -np.inf)
    if len(wanted) and len(keys):
        pos = np.clip(np.searchsorted(wanted, keys), 0, len(wanted) - 1)
        hit = wanted[pos] == keys
        np.maximum.at(best, pos[hit], dets["scores"][hit])
    reliability = np.full(n_images, np.inf)
    np.minimum.at(reliability, wanted // LABEL_SPAN, best)
    reliability[np.isposinf(reliability)] = -np.inf  # images without labels
    return reliability


@register_strategy("reliable_images")
def reliable_images(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    fraction: float = 0.5,
    min_score: float = 0.0,
) -> dict:
    """Keep the boxes of the ``fraction`` most reliable images, drop every box of the others.

    Args:
        fraction: share of the images (all images of the batch, i.e. of the split in
            ``wsod denoise``) that stay labelled, in (0, 1]; ties keep the earlier image.
        min_score: an image is never kept when its reliability is below this (0: every
            labelled class just needs a box, as ``image_filter``).

    Returns:
        The detection set without the boxes of the dropped images (they become the
        semi-supervised config's unlabelled images).
    """
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"reliable_images: fraction must be in (0, 1], got {fraction}")
    n_images = int(np.asarray(width).size)
    reliability = image_reliability(dets, image_labels, n_images)
    order = np.lexsort((np.arange(n_images), -reliability))  # most reliable first
    top = order[: math.ceil(float(fraction) * n_images)]
    kept = top[np.isfinite(reliability[top]) & (reliability[top] >= min_score)]
    return take(dets, np.isin(image_index(dets), kept))
