"""Image reading and down-scaling for proposal methods.

Pixels are read as every stage reads them: OpenCV's ``IMREAD_COLOR``, BGR, with the EXIF
orientation applied (the image as displayed, the size the split records: see
:mod:`wsod.contracts`). A large image bound for a small working size is decoded at a half, a
quarter or an eighth of its size (libjpeg's scaled decoding: a 12 MP photo reads in about a
quarter of the time), never below the working size.
"""

from __future__ import annotations

import os

import cv2
import numpy as np

# OpenCV's scaled-decoding flags, by reduction factor (colour, EXIF orientation applied)
_REDUCED = {
    2: cv2.IMREAD_REDUCED_COLOR_2,
    4: cv2.IMREAD_REDUCED_COLOR_4,
    8: cv2.IMREAD_REDUCED_COLOR_8,
}


class ImageSizeError(ValueError):
    """The pixels disagree with the size the split records for the image."""


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read an image as BGR uint8 (H,W,3); raise a message naming the file if it cannot."""
    return _imread(path, cv2.IMREAD_COLOR)


def _imread(path: str | os.PathLike, flag: int) -> np.ndarray:
    img = cv2.imread(os.fspath(path), flag)
    if img is None:
        raise FileNotFoundError(
            f"{path}: cannot read this image; check the split's info.data_root and file_name"
        )
    return img


def reduction(size: tuple[int, int], max_side: int | None) -> int:
    """The largest decoding reduction (1, 2, 4 or 8) that keeps an image of ``size`` (w, h) at
    least ``max_side`` on its longer side (1: no working size, or a small image)."""
    if not max_side:
        return 1
    return max([1, *(k for k in _REDUCED if max(size) / k >= max_side)])


def read_working_image(
    path: str | os.PathLike, size: tuple[int, int] | None, max_side: int | None
) -> tuple[np.ndarray, tuple[float, float]]:
    """Read ``path`` for a method working at ``max_side``, decoded reduced when it is large.

    Args:
        path: the image file.
        size: its ``(width, height)`` as the split records it (as displayed); None: unknown
            (read at full size, nothing checked).
        max_side: the method's working size (its longer side); None or 0: full size.

    Returns:
        ``(image BGR uint8 (h,w,3), (fx, fy))``: boxes found on the image map to the image's
        full pixels with ``x * fx``, ``y * fy`` (``(1.0, 1.0)`` when read at full size).

    Raises:
        ImageSizeError: the pixels' size (at the reduction) is not ``size``: the split was
            written under another size rule (an EXIF-rotated photo recorded as stored).
    """
    k = reduction(size, max_side) if size else 1
    img = _imread(path, _REDUCED[k] if k > 1 else cv2.IMREAD_COLOR)
    if size is None:
        return img, (1.0, 1.0)
    w, h = size
    rows, cols = img.shape[:2]
    if abs(rows - h / k) >= 1 or abs(cols - w / k) >= 1:
        got = f"{cols}x{rows}" if k == 1 else f"{cols}x{rows} at 1/{k}"
        raise ImageSizeError(
            f"{path}: the split records {w}x{h} but the image reads {got} (as displayed, EXIF "
            "orientation applied); rewrite the split with `wsod data` (`make data`)"
        )
    return img, (w / cols, h / rows)


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
