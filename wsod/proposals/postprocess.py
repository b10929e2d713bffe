"""Post-processing shared by every proposal method (and by imports).

Steps, in this order, on ``x1, y1, x2, y2`` float boxes (0-based, continuous pixel corners):

1. sort by score, descending (stable: equal scores keep the method's order);
2. clip to the image ``[0, width] x [0, height]``;
3. drop boxes whose width or height is below ``min_size`` pixels (after clipping);
4. de-duplicate: boxes whose corners agree after rounding to ``dedup_precision`` pixels
   (default 1 px, as Fast R-CNN's ``unique_boxes``) are one box; the highest-scoring copy is
   kept. Selective search returns many exact repeats (one per grouping strategy) and clipping
   makes more, so exact-up-to-rounding is what matters; near-duplicates (IoU > 0.95) are kept on
   purpose, because WSOD heads benefit from slightly shifted boxes, and removing them is a job
   for NMS downstream if wanted;
5. cap at ``max_boxes`` (the best by score).

Output scores are float32 in the same order as the boxes, descending, so mmdet's
``LoadProposals(num_max_proposals=k)`` (which takes the first ``k``) takes the best ``k``.
"""

from __future__ import annotations

import numpy as np


def rank_scores(n: int) -> np.ndarray:
    """Rank-based scores for methods without a score (selective search).

    The i-th box (0-based, in the method's own order) gets ``(n - i) / n``: strictly
    descending in ``(0, 1]``; the first box has 1.0.

    Returns:
        (n,) float32.
    """
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    return ((n - np.arange(n, dtype=np.float64)) / n).astype(np.float32)


def postprocess(
    boxes: np.ndarray,
    scores: np.ndarray | None,
    width: float,
    height: float,
    *,
    min_size: float = 8,
    max_boxes: int | None = 2000,
    dedup_precision: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Clip, drop tiny boxes, de-duplicate and cap proposals of one image.

    Args:
        boxes: (N,4) ``x1, y1, x2, y2`` (0-based, continuous pixels).
        scores: (N,) higher is better, or None for rank scores in the given order.
        width: image width in pixels (boxes are clipped to ``[0, width]``).
        height: image height in pixels.
        min_size: minimum width and height in pixels, after clipping (0 keeps all non-empty).
        max_boxes: keep at most this many (the best by score); None or <= 0 keeps all.
        dedup_precision: grid in pixels on which corners are compared for duplicates;
            0 compares exact float values.

    Returns:
        ``(bboxes (M,4) float32, scores (M,) float32)``, sorted by score descending.
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if scores is None:
        s = rank_scores(len(b)).astype(np.float64)
    else:
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        if s.shape[0] != b.shape[0]:
            raise ValueError(f"{len(b)} boxes but {len(s)} scores")
    finite = np.isfinite(b).all(axis=1) & np.isfinite(s)
    b, s = b[finite], s[finite]
    order = np.argsort(-s, kind="stable")
    b, s = b[order], s[order]
    b[:, 0::2] = np.clip(b[:, 0::2], 0, width)
    b[:, 1::2] = np.clip(b[:, 1::2], 0, height)
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    keep = (w >= max(min_size, 0)) & (h >= max(min_size, 0)) & (w > 0) & (h > 0)
    b, s = b[keep], s[keep]
    if len(b):
        key = np.round(b / dedup_precision) if dedup_precision > 0 else b
        _, first = np.unique(key, axis=0, return_index=True)
        first.sort()  # keep the best-scoring copy, in score order
        b, s = b[first], s[first]
    if max_boxes is not None and max_boxes > 0:
        b, s = b[:max_boxes], s[:max_boxes]
    return b.astype(np.float32).reshape(-1, 4), s.astype(np.float32)
