"""Image reading and optional down-scaling for proposal methods."""

from __future__ import annotations

import os

import cv2
import numpy as np


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read an image as BGR uint8 (H,W,3); raise a message naming the file if it cannot."""
    img = cv2.imread(os.fspath(path), cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(
            f"{path}: cannot read this image; check the split's info.data_root and file_name"
        )
    return img


def resize_max_side(img: np.ndarray, max_side: int | None) -> tuple[np.ndarray, float]:
    """Shrink ``img`` so its longer side is at most ``max_side`` (never enlarges).

    Returns:
        ``(image, scale)`` where ``scale`` = new size / old size (1.0 when unchanged). Boxes
        found on the returned image map back with ``boxes / scale``.
    """
    h, w = img.shape[:2]
    if not max_side or max(h, w) <= max_side:
        return img, 1.0
    scale = max_side / max(h, w)
    new = (max(1, round(w * scale)), max(1, round(h * scale)))
    return cv2.resize(img, new, interpolation=cv2.INTER_AREA), scale
