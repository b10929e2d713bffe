"""What the report shows from image-level tags alone (``metrics.json``'s ``tags`` entry).

Every report with label splits gets :func:`tag_tables`: tagged images per class, how often each
detector fires on the images tagged with a class (and on the others), and how weak and strong
agree. A run on tags-only data (no box anywhere: :func:`is_tags_only`) gets these instead of the
AP tables, after :func:`opening` and :func:`box_notes` (one line per box metric left out, and
why; or which subset of images the box metrics are over), and two
galleries drawn without ground truth (:func:`tags_galleries`): the pseudo labels on train
images, and every detector's boxes on val images, each image captioned with its tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from wsod.contracts import (
    category_names,
    detections_by_image,
    load_detections,
    load_split,
    resolve_data_root,
)
from wsod.report.document import Document
from wsod.report.gallery import box_layer
from wsod.report.plots import draw_panels, draw_row
from wsod.report.tables import fmt


def is_tags_only(m: Mapping) -> bool:
    """Whether the evaluated split had no box at all (``metrics.json`` ``boxes.coverage``)."""
    return (m.get("boxes") or {}).get("coverage") == "none"


def opening(m: Mapping, title: str | None) -> Document:
    """The title and first paragraph of a tags-only report (no box metric to announce)."""
    doc = Document(title or f"WSOD report — tags-only data, {m['split']}")
    doc.para(
        f"Evaluated split: {m['split']} ({m.get('num_images')} images, tags only: the data has "
        "no ground-truth boxes). What can be judged without boxes follows: the tagged images "
        "per class, how often each detector finds the tagged classes, how the weak and the "
        "strong detector agree, and galleries of the pseudo labels and of the detectors' boxes."
    )
    return doc


def box_notes(doc: Document, m: Mapping) -> None:
    """What the evaluated boxes cover, at the top of the report: one line per box metric left
    out (tags-only data), or the subset of images the box metrics are over."""
    for line in m.get("skipped") or []:
        doc.callout(line, warn=True)
    boxes = m.get("boxes") or {}
    if boxes.get("coverage") == "subset":
        doc.callout(
            f"Box metrics on a subset: boxes were given (wsod data --boxes) for "
            f"{boxes['num_boxed_images']} of the {boxes['num_images']} {m['split']} images; every "
            "AP below is over those images only (CorLoc and pseudo-label figures over the train "
            "images with boxes).",
            warn=True,
        )


def tag_tables(doc: Document, m: Mapping) -> None:
    """Images per class, detectors against the tags, weak/strong agreement (when present)."""
    tags = m.get("tags")
    if not tags:
        return
    counts = tags.get("images_per_class") or {}
    if counts:
        doc.heading("Tagged images per class")
        splits = list(counts)
        doc.table(
            ["class", *(f"{s} images" for s in splits)],
            [[c, *(str(counts[s].get(c, 0)) for s in splits)] for c in m["classes"]],
        )
    dets = tags.get("detectors") or {}
    thr = tags.get("score_thr")
    if dets:
        doc.heading(f"Detectors against the {m['split']} tags (a box scoring >= {thr})")
        doc.para(
            "Share of the images tagged with a class where the detector draws a box of that "
            "class, and of the images not tagged with it where it still does (%). From the tags "
            "alone: it says whether a detector finds the class, not whether its boxes are right."
        )
        ref = next(iter(dets.values()))["per_class"]
        header = ["class", "tagged images", *(f"{n}: tagged / untagged" for n in dets)]
        rows = [
            [c, str(ref[c]["tagged"])]
            + [
                f"{fmt(d['per_class'][c]['fires_tagged'])} / "
                f"{fmt(d['per_class'][c]['fires_untagged'])}"
                for d in dets.values()
            ]
            for c in m["classes"]
        ]
        rows.append(
            ["all classes", ""]
            + [f"{fmt(d['fires_tagged'])} / {fmt(d['fires_untagged'])}" for d in dets.values()]
        )
        doc.table(header, rows)
    _agreement_table(doc, m, tags.get("agreement") or {}, thr)


def _agreement_table(doc: Document, m: Mapping, agreement: Mapping, thr) -> None:
    for pair, a in agreement.items():
        doc.heading(f"Agreement {pair} on {m['split']} (a box scoring >= {thr})")
        doc.para(
            "Images where at least one of the two detectors draws a box of the class, the share "
            "of them where both do (%), and the mean IoU of their top boxes there: agreement "
            "between the black box and the detector trained on its pseudo labels, not accuracy."
        )
        rows = [
            [c, str(v["either"]), fmt(v["both_of_either"]), fmt(v["mean_iou"], pct=False)]
            for c, v in a["per_class"].items()
        ]
        rows.append(["all classes", "", fmt(a["both_of_either"]), fmt(a["mean_iou"], pct=False)])
        doc.table(["class", "images (either)", "both (%)", "mean IoU of top boxes"], rows)


PER_ROW = 3  # images side by side in a one-layer gallery (the pseudo labels): fills the page


def _draw(doc, out_dir, split, split_path, chosen, layers_of, prefix, caption) -> list[Path]:
    """A panel per ``(title, grouped boxes, score_thr)`` of ``layers_of``: one figure per chosen
    image, or with a single layer :data:`PER_ROW` images side by side per figure. No title is
    drawn inside the PNG: the caption below names the images and their tags."""
    import cv2

    root = resolve_data_root(split, split_path)
    names = dict(enumerate(category_names(split), 1))
    by_id = {int(im["id"]): im for im in split["images"]}
    items = []
    for img_id in chosen:
        im = by_id[img_id]
        arr = cv2.imread(str(root / im["file_name"]), cv2.IMREAD_COLOR)
        if arr is None:
            continue
        tags = ", ".join(names[c] for c in im["labels"]) or "no tag"
        panels = [
            (title, [box_layer(title, grouped, img_id, thr)]) for title, grouped, thr in layers_of
        ]
        items.append(
            (arr[:, :, ::-1].copy(), f"image {img_id} ({im['file_name']}; tags: {tags})", panels)
        )
    per_figure = PER_ROW if len(layers_of) == 1 else 1
    files = []
    for k in range(0, len(items), per_figure):
        group = items[k : k + per_figure]
        if per_figure == 1:
            image, text, panels = group[0]
            path = draw_panels(image, panels, out_dir / f"{prefix}_{k:02d}.png", names)
        else:  # one panel per image, titled by its id
            row = [(im, t.split(" (")[0], p[0][1]) for im, t, p in group]
            path = draw_row(row, out_dir / f"{prefix}_{k:02d}.png", names)
            text = "; ".join(t for _, t, _ in group)
        doc.image(path, f"{caption}: {text}")
        files.append(path)
    return files


def _choose(ids: list[int], n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(sorted(ids), size=min(n, len(ids)), replace=False).tolist())


def tags_galleries(
    doc: Document, m: Mapping, out_dir: Path, det_paths: Mapping, pseudo: Mapping | None, opts
) -> list[Path]:
    """The galleries of a tags-only report, drawn without ground truth.

    Args:
        det_paths: ``{name: COCO results json}`` on the evaluated split.
        pseudo: ``{image_id: {"bboxes", "scores", "labels"}}`` pseudo boxes on train, or None.
        opts: ``{"n", "seed", "score_thr"}`` as the report's other galleries.

    Returns:
        The PNG files written.
    """
    splits = (m.get("tags") or {}).get("splits") or {}
    n, seed, thr = opts["n"], opts["seed"], opts["score_thr"]
    files: list[Path] = []
    train_path = splits.get("train")
    if pseudo and train_path and Path(train_path).is_file():
        doc.heading("Gallery: pseudo labels on train images")
        train = load_split(train_path)
        chosen = _choose([int(i) for i in pseudo], n, seed)
        layers = [("pseudo labels", pseudo, None)]
        files += _draw(doc, out_dir, train, train_path, chosen, layers, "pseudo", "pseudo labels")
    split_path = splits.get(m["split"])
    if det_paths and split_path and Path(split_path).is_file():
        doc.heading(f"Gallery: the detectors' boxes on {m['split']} images (score >= {thr})")
        split = load_split(split_path)
        layers = [
            (name, detections_by_image(load_detections(p, split)), thr)
            for name, p in det_paths.items()
        ]
        chosen = _choose([int(im["id"]) for im in split["images"]], n, seed)
        files += _draw(doc, out_dir, split, split_path, chosen, layers, "gallery", m["split"])
    return files
