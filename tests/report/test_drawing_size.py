"""The report draws a phone-size photo at a bounded size: a real VOC photo upscaled to
6000x4000 reaches matplotlib at most ``DRAW_SIDE`` px on its longer side, its boxes scaled
with it (before: every one of its 24 MP was resampled for each panel, seconds a panel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from PIL import Image

from wsod.report.plots import DRAW_SIDE, draw_panels, shrink_for_drawing


def test_a_phone_size_photo_is_drawn_at_the_drawing_size(voc_root: Path, tmp_path, monkeypatch):
    with Image.open(voc_root / "JPEGImages" / "000012.jpg") as im:
        big = np.asarray(im.convert("RGB").resize((6000, 4000), Image.BICUBIC))
    layer = {"name": "gt", "bboxes": np.array([[600.0, 400.0, 3600.0, 2800.0]]), "labels": [7]}
    small, (scaled,) = shrink_for_drawing(big, [layer])
    assert small.shape == (427, DRAW_SIDE, 3)
    np.testing.assert_allclose(scaled["bboxes"], [[64, 42.7, 384, 298.9]], atol=0.05)
    assert scaled["labels"] == [7] and layer["bboxes"][0, 0] == 600.0  # the input is kept
    shown = []
    real = Axes.imshow
    monkeypatch.setattr(
        Axes, "imshow", lambda ax, a, *k, **kw: shown.append(a.shape) or real(ax, a, *k, **kw)
    )
    out = draw_panels(big, [("gt", [layer]), ("again", [layer])], tmp_path / "p.png", {7: "car"})
    assert shown == [(427, DRAW_SIDE, 3)] * 2 and out.is_file()
    # a VOC-size image is drawn as it is
    small, (same,) = shrink_for_drawing(big[:333, :500], [layer])
    assert small.shape == (333, 500, 3) and same["bboxes"] is layer["bboxes"]
