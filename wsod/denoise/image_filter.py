"""Image-level reliability filter: keep only images whose every labelled class is found.

A pseudo-labelled image teaches the strong detector twice: its boxes are positives and
everything else in it is background. An image in which some labelled class has no box (or only a
low-scoring one) therefore does harm twice: the class's objects become background, and a weak
box is likely wrong anyway. This filter drops *all* boxes of such an image, so the strong stage
trains on the remaining images only (mmdet's ``filter_empty_gt`` skips boxless images) instead of
on false negatives. It trades images for precision (measured on VOC07:
docs/experiments/2026-12-03-denoise-image-filter.md).
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import LABEL_SPAN, group_keys, image_index, labelled_keys, take
from wsod.denoise.registry import register_strategy


@register_strategy("image_filter")
def image_filter(
    dets: dict, *, image_labels: np.ndarray, width, height, min_score: float = 0.0
) -> dict:
    """Drop every box of an image in which a labelled class has no box scoring >= min_score.

    Args:
        min_score: the best box of every labelled class must reach this score (0: every labelled
            class just needs a box). Scores are the black box's, so the value depends on it:
            after a step that rescales ``scores`` (``minmax_normalize``) the detector's score
            kept in ``raw_scores`` is compared.
    """
    keys = group_keys(dets)
    wanted = np.unique(labelled_keys(image_labels))
    scores = dets.get("raw_scores", dets["scores"])
    found = np.unique(keys[scores >= min_score])
    missing = wanted[~np.isin(wanted, found)]
    bad_images = np.unique(missing // LABEL_SPAN)
    return take(dets, ~np.isin(image_index(dets), bad_images))
