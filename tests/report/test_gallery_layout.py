"""The galleries' drawing: captions inside the image and off each other, a word on a panel with
nothing to draw, the one-layer (pseudo-label) gallery filling its row with several images.

Before: captions sat above their boxes whatever the room (over the panel title, off the image's
top or right edge) and on top of each other; a panel with no box above the threshold was a bare
image; the tags-only pseudo-label gallery drew one narrow image per row with its title inside the
PNG, repeated in the caption.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from wsod.report.plots import draw_row, empty_note, label_anchors


def _overlap(a, b, line) -> bool:
    (ax, ay, aw), (bx, by, bw) = a, b
    return ax < bx + bw and bx < ax + aw and ay < by + line and by < ay + line


def test_captions_stay_inside_the_image_and_off_each_other():
    h, w, line = 300, 400, 12.0
    boxes = np.array(
        [
            [10, 2, 200, 150],  # at the top: no room above
            [12, 4, 180, 120],  # nearly the same box: its caption would cover the first's
            [380, 100, 399, 200],  # at the right edge: the caption would run off
            [50, 200, 120, 290],  # room above: caption just above the box
        ],
        float,
    )
    widths = [80.0, 80.0, 60.0, 50.0]
    anchors = label_anchors(boxes, widths, line, h, w)
    rects = [(x, y, wd) for (x, y), wd in zip(anchors, widths, strict=True)]
    for (x, y), wd in zip(anchors, widths, strict=True):
        assert 0 <= x and x + wd <= w and 0 <= y and y + line <= h
    for i in range(len(rects)):
        for j in range(i):
            assert not _overlap(rects[i], rects[j], line), (i, j, rects)
    assert anchors[3] == (50.0, 200.0 - line)  # above its box when there is room
    assert anchors[0][1] >= boxes[0][1]  # inside its box at the top


def test_a_panel_with_nothing_to_draw_says_so():
    empty = {"name": "weak", "bboxes": np.zeros((0, 4)), "labels": np.zeros(0, int)}
    gt = {"name": "gt", "bboxes": np.ones((1, 4)), "labels": np.ones(1, int), "dashed": True}
    scored = {**empty, "scores": np.zeros(0)}
    assert empty_note([gt, scored]) == "no box above the drawing threshold"
    assert empty_note([empty]) == "no box"
    assert empty_note([gt]) is None  # the ground-truth panel itself
    full = {"name": "weak", "bboxes": np.ones((1, 4)), "labels": np.ones(1, int)}
    assert empty_note([gt, full]) is None


def test_a_row_of_real_images_fills_the_figure(voc_root: Path, voc_train_ids, tmp_path: Path):
    items = []
    for i in voc_train_ids[:3]:
        with Image.open(voc_root / "JPEGImages" / f"{i}.jpg") as im:
            arr = np.asarray(im.convert("RGB"))
        layer = {"name": "pseudo labels", "bboxes": np.array([[5.0, 5, 200, 200]]),
                 "labels": np.array([1]), "scores": np.array([0.9])}  # fmt: skip
        items.append((arr, f"image {i}", [layer]))
    row = draw_row(items, tmp_path / "row.png", {1: "aeroplane"})
    one = draw_row(items[:1], tmp_path / "one.png", {1: "aeroplane"})
    with Image.open(row) as a, Image.open(one) as b:
        assert a.size[0] > 2.5 * b.size[0]  # three images side by side, not one per row
        assert a.size[1] <= b.size[1] * 1.6
