"""Figures of the report (matplotlib, Agg backend): PR curves, per-class AP bars, a gallery.

All functions take json-ready metrics (``metrics.json``) or arrays and write one PNG each.
Boxes are float ``x1, y1, x2, y2`` 0-based pixels.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {
    "gt": "#2ca02c",
    "weak": "#1f77b4",
    "strong": "#d62728",
    "fsd": "#9467bd",
    "pseudo labels": "#ff7f0e",
}
_CYCLE = ["#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


def color_of(name: str, i: int = 0) -> str:
    """A stable colour per detector name."""
    return COLORS.get(name, _CYCLE[i % len(_CYCLE)])


def pr_curves(
    detectors: Mapping[str, Mapping],
    classes: Sequence[str],
    path: str | os.PathLike,
    ap_key: str = "ap_11points",
) -> Path:
    """One subplot per class with every detector's (interpolated) PR curve.

    Args:
        detectors: ``{name: metrics entry}`` with ``per_class[class]["pr"]`` recall/precision.
        classes: class names, in display order.
        path: output PNG.
        ap_key: which AP to print in the legend.
    """
    n = len(classes)
    cols = min(5, n)
    rows = math.ceil(n / cols)
    # 5 columns of ~210 px at 100 dpi fit the report's page without being scaled down
    fig, axes = plt.subplots(
        rows, cols, figsize=(2.1 * cols, 1.9 * rows), squeeze=False, sharex=True, sharey=True
    )
    for k, cls in enumerate(classes):
        ax = axes[k // cols][k % cols]
        for i, (name, det) in enumerate(detectors.items()):
            pc = det["per_class"].get(cls)
            if not pc or not pc.get("num_gt"):
                continue
            ap = pc.get(ap_key)
            label = f"{name} {ap * 100:.1f}" if ap is not None else f"{name} n/a"
            ax.plot(
                pc["pr"]["recall"],
                pc["pr"]["precision"],
                color=color_of(name, i),
                lw=1.2,
                label=label,
            )
        ax.set_title(cls, fontsize=9)
        if not any((det["per_class"].get(cls) or {}).get("num_gt") for det in detectors.values()):
            ax.text(0.5, 0.5, "no GT boxes", ha="center", va="center", fontsize=8, color="gray")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6.5, loc="lower left")
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.supxlabel("recall", fontsize=9)
    fig.supylabel("precision (envelope)", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def ap_bars(
    columns: Mapping[str, Sequence[float | None]],
    classes: Sequence[str],
    path: str | os.PathLike,
    ylabel: str = "AP@0.5 (%, 11-point)",
) -> Path:
    """Grouped bars: per class, one bar per column (detector); None is drawn as a missing bar.

    Args:
        columns: ``{name: per-class values in [0, 1] or None}``, same order as ``classes``.
        classes: class names.
        path: output PNG.
        ylabel: y axis label.
    """
    n, m = len(classes), max(len(columns), 1)
    x = np.arange(n)
    width = 0.8 / m
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * n * max(1, m / 2)), 3.2), layout="constrained")
    for i, (name, vals) in enumerate(columns.items()):
        v = np.array([np.nan if a is None else a * 100 for a in vals], dtype=float)
        ax.bar(x + (i - (m - 1) / 2) * width, v, width, label=name, color=color_of(name, i))
    ax.set_xticks(x, classes, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.set_ylim(0, 100)
    # above the axes: bars reach 100 % and would hide a legend inside
    ax.legend(fontsize=8, ncol=m, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


LABEL_PT = 6  # box captions' font size (points)


def label_anchors(
    boxes: np.ndarray, widths: Sequence[float], line: float, h: int, w: int
) -> list[tuple[float, float]]:
    """Where each box's caption goes: ``(x, y)`` of its top-left corner in image pixels.

    A caption sits just above its box, inside the box when there is no room above, never past
    the image's edges, and moves down past any caption placed before it that it would cover
    (boxes in drawing order, best first).

    Args:
        boxes: (N,4) x1y1x2y2 in pixels.
        widths: each caption's width in pixels; line: a caption's height in pixels.
        h, w: the image's size.
    """
    placed: list[tuple[float, float, float]] = []  # x, y, width
    out = []
    for b, width in zip(np.asarray(boxes).reshape(-1, 4), widths, strict=True):
        x = float(min(max(b[0], 0.0), max(w - width, 0.0)))
        y = float(b[1] - line if b[1] - line >= 0 else max(b[1], 0.0))
        moved = True
        while moved and y + line <= h:
            moved = False
            for px, py, pw in placed:
                if x < px + pw and px < x + width and y < py + line and py < y + line:
                    y, moved = py + line, True
        y = min(y, max(h - line, 0.0))
        placed.append((x, y, width))
        out.append((x, y))
    return out


def empty_note(layers: Sequence[Mapping]) -> str | None:
    """The word a panel shows when none of its own layers (the solid ones; a dashed layer is
    the ground truth drawn for reference) has a box to draw, else None."""
    own = [la for la in layers if not la.get("dashed")]
    if not own or any(len(np.asarray(la["labels"])) for la in own):
        return None
    scored = any("scores" in la for la in own)
    return "no box above the drawing threshold" if scored else "no box"


def _pixels_per_unit(ax) -> tuple[float, float]:
    """Display pixels per image pixel along x and y in ``ax`` (an image axes, laid out)."""
    (x0, y0), (x1, y1) = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
    return abs(x1 - x0), abs(y1 - y0)


def _draw_layers(ax, layers: Sequence[Mapping], class_names: Mapping, hw) -> None:
    """Boxes and captions of a panel's layers (see :func:`draw_panels`) in a laid-out ``ax``;
    ``hw`` the image's (h, w). Each caption's size is measured as drawn (its text and its
    background's padding), so :func:`label_anchors` keeps it whole inside the image."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    sx, sy = _pixels_per_unit(ax)
    pad_pt = 0.5  # the caption background's padding (points)
    pad = pad_pt * fig.dpi / 72  # in display pixels
    for i, layer in enumerate(layers):
        color = color_of(layer["name"], i)
        scores = layer.get("scores")
        boxes = np.asarray(layer["bboxes"]).reshape(-1, 4)
        caps = [class_names.get(int(c), str(c)) for c in np.asarray(layer["labels"])]
        if scores is not None:
            caps = [f"{c} {float(s):.2f}" for c, s in zip(caps, scores, strict=True)]
        texts = [
            ax.text(0, 0, cap, fontsize=LABEL_PT, color="white", va="top", clip_on=True,
                    bbox={"facecolor": color, "alpha": 0.7, "pad": pad_pt, "lw": 0})
            for cap in caps
        ]  # fmt: skip
        sizes = [t.get_window_extent(renderer) for t in texts]
        widths = [(e.width + 2 * pad) / sx for e in sizes]
        line = max([(e.height + 2 * pad) / sy for e in sizes], default=0.0)
        anchors = label_anchors(boxes, widths, line, *hw)
        for b, text, (x, y) in zip(boxes, texts, anchors, strict=True):
            ls = "--" if layer.get("dashed") else "-"
            ax.add_patch(
                plt.Rectangle(
                    (b[0], b[1]), b[2] - b[0], b[3] - b[1], fill=False, ec=color, lw=1.3, ls=ls
                )
            )
            text.set_position((x + pad / sx, y + pad / sy))  # the background's corner at x, y


def _note(ax, note: str) -> None:
    """``note`` centred in ``ax``, wrapped onto more lines until it fits the panel's width."""
    import textwrap

    text = ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                   bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})  # fmt: skip
    renderer = ax.figure.canvas.get_renderer()
    room = ax.get_window_extent(renderer).width * 0.9
    chars = len(note)
    while text.get_window_extent(renderer).width > room and chars > 6:
        chars = max(6, int(chars * 0.8))
        text.set_text(textwrap.fill(note, chars))


def draw_panels(
    image: np.ndarray,
    panels: Sequence[tuple[str, Sequence[Mapping]]],
    path: str | os.PathLike,
    class_names: Mapping[int, str],
    title: str | None = None,
) -> Path:
    """Draw one image several times side by side, each with its own box layers.

    Args:
        image: (H,W,3) RGB uint8.
        panels: ``[(panel title, [layer, ...]), ...]``; a layer is ``{"name", "bboxes" (N,4)
            x1y1x2y2, "labels" (N,), optional "scores" (N,), optional "dashed"}``.
        path: output PNG.
        class_names: ``{category_id: name}`` for the box captions.
        title: figure title (the report's galleries leave it to the caption).
    """
    return draw_row([(image, t, layers) for t, layers in panels], path, class_names, title)


# longest side (px) an image is drawn at: twice a panel's ~300 px, so a 12 MP photo costs what a
# VOC image does (matplotlib resamples every pixel it is given: seconds a panel at 12 MP)
DRAW_SIDE = 640


def shrink_for_drawing(
    image: np.ndarray, layers: Sequence[Mapping], side: int = DRAW_SIDE
) -> tuple[np.ndarray, list[Mapping]]:
    """``image`` shrunk to at most ``side`` px on its longer side, and ``layers`` with their
    boxes scaled to match (unchanged when the image is small enough)."""
    h, w = image.shape[:2]
    if max(h, w) <= side:
        return image, list(layers)
    import cv2

    f = side / max(h, w)
    small = cv2.resize(
        image, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA
    )
    fx, fy = small.shape[1] / w, small.shape[0] / h
    scaled = [
        {**la, "bboxes": np.asarray(la["bboxes"], float).reshape(-1, 4) * [fx, fy, fx, fy]}
        for la in layers
    ]
    return small, scaled


def draw_row(
    items: Sequence[tuple[np.ndarray, str, Sequence[Mapping]]],
    path: str | os.PathLike,
    class_names: Mapping[int, str],
    title: str | None = None,
) -> Path:
    """Panels side by side, each ``(image (H,W,3) RGB uint8, title, [layer, ...])`` (layers as in
    :func:`draw_panels`): captions stay whole inside the image and off each other
    (:func:`label_anchors`); a panel with nothing to draw says so inside it
    (:func:`empty_note`). Images are drawn at most :data:`DRAW_SIDE` px on their longer side
    (:func:`shrink_for_drawing`)."""
    return _save(row_figure(items, class_names, title), path, dpi=110)


def row_figure(
    items: Sequence[tuple[np.ndarray, str, Sequence[Mapping]]],
    class_names: Mapping[int, str],
    title: str | None = None,
):
    """The figure :func:`draw_row` saves (matplotlib ``Figure``; the caller closes it)."""
    shrunk = []
    for image, ptitle, layers in items:
        small, scaled = shrink_for_drawing(image, layers)
        shrunk.append((small, ptitle, scaled))
    items = shrunk
    # inches per pixel: panels ~2.8 in, ~300 px at 110 dpi: three side by side fit the report's
    # page at full size (box captions stay readable) and the html stays small
    scales = [2.8 / max(im.shape[:2]) for im, _, _ in items]
    width = sum(im.shape[1] * sc for (im, _, _), sc in zip(items, scales, strict=True))
    height = max(im.shape[0] * sc for (im, _, _), sc in zip(items, scales, strict=True))
    # constrained layout keeps the figure title clear of the panel titles
    fig, axes = plt.subplots(
        1, len(items), figsize=(width, height + 0.4), squeeze=False, layout="constrained"
    )
    for ax, (image, ptitle, _) in zip(axes[0], items, strict=True):
        ax.imshow(image)
        ax.set_title(ptitle, fontsize=8)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=8)
    # lay the panels out once and keep them there: captions are measured in display pixels
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    for ax, (image, _, layers) in zip(axes[0], items, strict=True):
        _draw_layers(ax, layers, class_names, image.shape[:2])
        note = empty_note(layers)
        if note:
            _note(ax, note)
    return fig


def _save(fig, path: str | os.PathLike, dpi: int = 100) -> Path:
    from wsod.utils.io import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    plt.close(fig)
    return path
