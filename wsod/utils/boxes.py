"""Plain numpy box math on x1,y1,x2,y2 float boxes (0-based pixels, continuous coordinates)."""

from __future__ import annotations

import numpy as np


def box_area(boxes: np.ndarray) -> np.ndarray:
    """(N,4) -> (N,) areas (w, h clipped at 0)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)


def box_intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N,4), (M,4) -> (N,M) intersection areas."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    return wh[..., 0] * wh[..., 1]


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N,4), (M,4) -> (N,M) IoU; 0 where the union is empty."""
    inter = box_intersection(a, b)
    union = box_area(a)[:, None] + box_area(b)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
