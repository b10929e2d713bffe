"""Sliding-window proposals for tests: a known, dense set of boxes on any image size."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def grid_proposals(
    width: int, height: int, fracs: Sequence[float] = (0.3, 0.5, 0.7, 0.9)
) -> dict[str, np.ndarray]:
    """The whole image + square windows of side ``frac x min(width, height)`` for each frac, at
    half-size stride; ``{"bboxes": (N,4) float32 x1y1x2y2, "scores": (N,) descending}``."""
    boxes = [[0, 0, width, height]]
    for frac in fracs:
        s = frac * min(width, height)
        for y in np.arange(0, height - s + 1, s / 2):
            for x in np.arange(0, width - s + 1, s / 2):
                boxes.append([x, y, x + s, y + s])
    b = np.array(boxes, np.float32)
    return {"bboxes": b, "scores": np.linspace(1, 0, len(b), dtype=np.float32)}
