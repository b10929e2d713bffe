"""Selective search (Uijlings et al. 2013) through OpenCV contrib's ``cv2.ximgproc``.

``fast`` mode is OpenCV's ``switchToSelectiveSearchFast`` (2 colour spaces, 2 strategies,
k in {50, 100}); ``quality`` is ``switchToSelectiveSearchQuality`` (more colour spaces, k, and
strategies: more boxes, better recall, ~4-5x slower).

Scores: selective search has none. OpenCV orders its boxes by the paper's pseudo-random
ranking (hierarchy level x a random number), so we give the i-th of N boxes the rank score
``(N - i) / N`` (see :func:`wsod.proposals.postprocess.rank_scores`). Downstream code may sort
and cap by score; the values carry only the order.

Determinism: OpenCV draws that random number with C ``rand()``; we seed it with ``srand`` from a
hash of the seed and the image key, so a rerun (or a resumed or sharded run) gives identical
boxes in the same order.
"""

from __future__ import annotations

import ctypes
import zlib

import cv2
import numpy as np

from wsod.proposals.image import resize_max_side
from wsod.proposals.postprocess import rank_scores

MODES = ("fast", "quality")

try:  # the C library's rand(), which OpenCV's selective search uses for its ranking
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None)
except OSError:  # pragma: no cover - non-POSIX
    _LIBC = None


def image_seed(seed: int, key: str) -> int:
    """A 31-bit seed from a global seed and an image key (stable across processes)."""
    return (zlib.crc32(key.encode()) ^ (seed * 2654435761)) & 0x7FFFFFFF


def selective_search(
    img: np.ndarray, mode: str = "fast", resize: int | None = None, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Selective search boxes of one image.

    Args:
        img: BGR uint8 (H,W,3).
        mode: ``'fast'`` or ``'quality'``.
        resize: if set, run on a copy whose longer side is at most this many pixels; boxes are
            scaled back to the original image.
        seed: seed for OpenCV's ranking (C ``srand``); None leaves the C RNG alone.

    Returns:
        ``(bboxes (N,4) float32 x1y1x2y2 in original pixels, scores (N,) float32 rank scores)``,
        in OpenCV's ranking order (not yet clipped, filtered or de-duplicated).
    """
    if mode not in MODES:
        raise ValueError(f"unknown selective search mode {mode!r}; choose one of {MODES}")
    small, scale = resize_max_side(img, resize)
    ss = cv2.ximgproc.segmentation.createSelectiveSearchSegmentation()
    ss.setBaseImage(small)
    if mode == "fast":
        ss.switchToSelectiveSearchFast()
    else:
        ss.switchToSelectiveSearchQuality()
    if seed is not None and _LIBC is not None:
        _LIBC.srand(ctypes.c_uint(seed))
    rects = np.asarray(ss.process(), dtype=np.float64).reshape(-1, 4)  # x, y, w, h
    boxes = rects.copy()
    boxes[:, 2:] += boxes[:, :2]  # a w x h pixel block starting at (x, y) -> continuous corners
    boxes /= scale
    return boxes.astype(np.float32), rank_scores(len(boxes))
