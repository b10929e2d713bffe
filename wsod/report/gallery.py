"""The report's image gallery: predictions (and pseudo labels) drawn next to ground truth.

A diagnostic that reads the eval-only gt file (:mod:`wsod.evaluation.gt`) to draw GT boxes
(dashed) beside the boxes of each detector; it feeds nothing back into training.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from wsod.contracts import detections_by_image, load_detections
from wsod.evaluation.gt import class_names, gt_by_image, image_root, load_gt
from wsod.report.document import Document
from wsod.report.plots import draw_panels


def _image_reader(gt: Mapping, gt_path: str | os.PathLike | None):
    import cv2

    root = image_root(gt, gt_path)
    by_id = {int(im["id"]): im for im in gt["images"]}

    def read(img_id: int) -> np.ndarray | None:
        im = by_id[img_id]
        path = Path(im["file_name"]) if root is None else root / im["file_name"]
        arr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        return None if arr is None else arr[:, :, ::-1].copy()

    return read


def box_layer(
    name: str,
    grouped: Mapping,
    img_id: int,
    score_thr: float | None = None,
    top: int = 20,
    dashed: bool = False,
) -> dict:
    g = grouped.get(img_id)
    if g is None:
        return {"name": name, "bboxes": np.zeros((0, 4)), "labels": np.zeros(0, int)}
    keep = np.arange(len(g["labels"]))
    if "scores" in g:
        keep = keep[np.argsort(-g["scores"], kind="stable")]
        if score_thr is not None:
            keep = keep[g["scores"][keep] >= score_thr]
        keep = keep[:top]
    layer = {
        "name": name,
        "bboxes": g["bboxes"][keep],
        "labels": g["labels"][keep],
        "dashed": dashed,
    }
    if "scores" in g:
        layer["scores"] = g["scores"][keep]
    return layer


def gallery(
    doc: Document,
    out_dir: Path,
    gt_path: str | os.PathLike,
    det_paths: Mapping,
    n: int,
    seed: int,
    score_thr: float,
    prefix: str,
    caption: str,
    pseudo: Mapping | None = None,
) -> list[Path]:
    """Draw ``n`` images of a gt file (chosen with ``seed`` among those with boxes; with
    ``pseudo``, among those with pseudo boxes too) into ``doc``: ground truth, the pseudo
    labels vs GT (dashed) and each detector's boxes scoring >= ``score_thr``.

    Args:
        doc: the report document; out_dir: where the ``<prefix>_<k>.png`` files go.
        gt_path: eval-only gt file (``info.data_root`` + ``file_name`` locate the images).
        det_paths: ``{name: COCO results json}`` on the gt file's images.
        pseudo: ``{image_id: {"bboxes", "scores", "labels"}}`` pseudo boxes, or None.

    Returns:
        The PNG files written (an image that cannot be read is skipped).
    """
    gt = load_gt(gt_path)
    gts = gt_by_image(gt)
    names = class_names(gt)
    dets = {k: detections_by_image(load_detections(p, gt)) for k, p in det_paths.items()}
    candidates = sorted(i for i, g in gts.items() if len(g["labels"]))
    if pseudo is not None:
        candidates = [i for i in candidates if i in pseudo]
    if not candidates or n <= 0:
        return []
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(candidates, size=min(n, len(candidates)), replace=False).tolist())
    read = _image_reader(gt, gt_path)
    files = []
    for k, img_id in enumerate(chosen):
        image = read(img_id)
        if image is None:
            continue
        gt_layer = box_layer("gt", gts, img_id, dashed=True)
        panels = [("ground truth", [gt_layer])]
        if pseudo is not None:
            panels.append(
                (
                    "pseudo labels vs GT (dashed)",
                    [gt_layer, box_layer("pseudo labels", pseudo, img_id)],
                )
            )
        for name, grouped in dets.items():
            panels.append(
                (
                    f"{name} (score >= {score_thr})",
                    [gt_layer, box_layer(name, grouped, img_id, score_thr)],
                )
            )
        fname = next(im["file_name"] for im in gt["images"] if int(im["id"]) == img_id)
        # no title inside the PNG: the caption below names the image
        path = draw_panels(image, panels, out_dir / f"{prefix}_{k:02d}.png", names)
        doc.image(path, f"{caption}: image {img_id} ({fname})")
        files.append(path)
    return files
