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
import pytest
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


def _portrait(voc_root: Path) -> np.ndarray:
    """A real VOC photo stored taller than wide (000023, 334x500): a narrow panel."""
    with Image.open(voc_root / "JPEGImages" / "000023.jpg") as im:
        arr = np.asarray(im.convert("RGB"))
    assert arr.shape[0] > arr.shape[1]
    return arr


def _inside(inner, outer, tol: float = 0.5) -> bool:
    """Whether display box ``inner`` lies within ``outer`` (pixels, ``tol`` of rounding)."""
    return (
        inner.x0 >= outer.x0 - tol
        and inner.x1 <= outer.x1 + tol
        and inner.y0 >= outer.y0 - tol
        and inner.y1 <= outer.y1 + tol
    )


@pytest.mark.parametrize("photo", ["000023", "000012"])  # stored portrait, landscape
def test_captions_at_the_image_borders_are_drawn_whole(voc_root: Path, photo: str):
    """Before: a caption's width was guessed from its length and the panel's nominal size, so
    one at the border ran past the image and was cut there ("erson 0.52"). Captions are
    measured as drawn now: every caption's background, its text inside, lies within the image,
    at the left, right and bottom edges, in the gallery's three-panel row."""
    import matplotlib.pyplot as plt

    from wsod.report.plots import row_figure

    with Image.open(voc_root / "JPEGImages" / f"{photo}.jpg") as im:
        image = np.asarray(im.convert("RGB"))
    h, w = image.shape[:2]
    boxes = np.array(
        [
            [0.0, 0, 60, 120],  # at the left edge and the top
            [w - 40.0, 150, w - 1, 260],  # at the right edge
            [w - 90.0, h - 30, w - 1, h - 1],  # in the bottom right corner
            [0.0, h - 20, 50, h - 1],  # in the bottom left corner
        ]
    )
    layer = {"name": "weak", "bboxes": boxes, "labels": np.array([15, 15, 12, 15]),
             "scores": np.array([0.52, 0.91, 0.33, 0.47])}  # fmt: skip
    names = {12: "diningtable", 15: "person"}
    panels = ["ground truth", "pseudo labels vs GT (dashed)", "weak (score >= 0.3)"]
    fig = row_figure([(image, t, [layer]) for t in panels], names)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            picture = ax.images[0].get_window_extent(renderer)
            captions = [t for t in ax.texts if t.get_text().split()[0] in names.values()]
            assert sorted(t.get_text() for t in captions) == [
                "diningtable 0.33", "person 0.47", "person 0.52", "person 0.91"
            ]  # fmt: skip
            for t in captions:
                patch = t.get_bbox_patch().get_window_extent(renderer)
                assert _inside(t.get_window_extent(renderer), patch), t.get_text()
                assert _inside(patch, picture), (t.get_text(), patch, picture)
    finally:
        plt.close(fig)


def test_the_empty_panel_note_fits_inside_its_panel(voc_root: Path):
    """Before: "no box above the drawing threshold" was one line wider than a narrow (portrait)
    panel and ran over its neighbours. It wraps until it fits the panel now."""
    import matplotlib.pyplot as plt

    from wsod.report.plots import row_figure

    image = _portrait(voc_root)
    gt = {"name": "gt", "bboxes": np.array([[20.0, 30, 200, 300]]), "labels": np.array([15]),
          "dashed": True}  # fmt: skip
    empty = {"name": "strong", "bboxes": np.zeros((0, 4)), "labels": np.zeros(0, int),
             "scores": np.zeros(0)}  # fmt: skip
    items = [(image, "ground truth", [gt]), (image, "strong (score >= 0.3)", [gt, empty])]
    fig = row_figure(items, {15: "person"})
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[1]
        note = next(t for t in ax.texts if "no box" in t.get_text())
        assert note.get_text().replace("\n", " ") == "no box above the drawing threshold"
        panel = ax.get_window_extent(renderer)
        assert _inside(note.get_bbox_patch().get_window_extent(renderer), panel)
    finally:
        plt.close(fig)
