"""Per-image de-noise results -> the pseudo-label file and its counts (training side).

The results are ``{image_id: detection set}`` (:mod:`wsod.denoise.common`) for every image of
the split. The pseudo-label file is a COCO instances dict: ``images`` (id, file_name, width,
height) from the split, its ``categories``, and ``annotations`` with id, image_id, category_id,
bbox xywh, area, iscrowd (1 for an ignore region), ``score`` (the detector's, ``raw_scores`` when
a strategy rewrote ``scores``) and ``weight`` when the chain sets one. Nothing here reads a
ground-truth box.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from wsod.contracts import xyxy_to_xywh
from wsod.denoise.common import take


def pseudo_boxes(
    results: Mapping[int, Mapping[str, np.ndarray]],
) -> dict[int, dict[str, np.ndarray]]:
    """The pseudo boxes of each image, without ignore regions."""
    return {i: take(d, d["ignore"] == 0) if "ignore" in d else dict(d) for i, d in results.items()}


def _annotations(im: Mapping, d: Mapping[str, np.ndarray], first_id: int) -> list[dict]:
    """The annotations of one image's results, ids from ``first_id``."""
    xywh = np.round(xyxy_to_xywh(d["bboxes"]), 2)
    score = d.get("raw_scores", d["scores"])
    weights = d.get("weights")
    ignore = d.get("ignore")
    anns = []
    for j in range(len(xywh)):
        a = {
            "id": first_id + j,
            "image_id": int(im["id"]),
            "category_id": int(d["labels"][j]),
            "bbox": [float(v) for v in xywh[j]],
            "area": float(xywh[j, 2] * xywh[j, 3]),
            "iscrowd": int(ignore[j]) if ignore is not None else 0,
            "score": round(float(score[j]), 6),
        }
        if weights is not None:
            a["weight"] = round(float(weights[j]), 6)
        anns.append(a)
    return anns


def to_coco(
    results: Mapping[int, Mapping[str, np.ndarray]], split: Mapping, info: Mapping | None = None
) -> dict:
    """Per-image pseudo boxes -> COCO instances dict (see the module docstring)."""
    images = [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in split["images"]]
    anns: list[dict] = []
    for im in split["images"]:
        d = results.get(int(im["id"]))
        if d is not None and len(d["scores"]):
            anns += _annotations(im, d, len(anns) + 1)
    return {
        "info": dict(info or {}),
        "images": images,
        "categories": list(split["categories"]),
        "annotations": anns,
    }


def count_summary(
    results: Mapping[int, Mapping[str, np.ndarray]],
    split: Mapping,
    raw: Mapping[int, Mapping[str, np.ndarray]],
) -> dict:
    """Counts of the pseudo labels: boxes, boxes per image, images left without a box,
    labelled (image, class) pairs without any detection (``raw``: label consistency only) or
    lost by the chain, and ignore regions."""
    n_regions = sum(int(d["ignore"].sum()) for d in results.values() if "ignore" in d)
    results = pseudo_boxes(results)
    n_boxes = sum(len(d["scores"]) for d in results.values())
    n_img = len(split["images"])
    empty = sum(1 for d in results.values() if len(d["scores"]) == 0)
    no_det = 0
    lost = 0
    for im in split["images"]:
        have_raw = set(raw[int(im["id"])]["labels"].tolist())
        have = set(results[int(im["id"])]["labels"].tolist())
        for c in set(im["labels"]):
            no_det += c not in have_raw
            lost += c in have_raw and c not in have
    return {
        "images": n_img,
        "boxes": n_boxes,
        "boxes_per_image": n_boxes / n_img,
        "images_without_boxes": empty,
        "pairs_without_detections": no_det,
        "pairs_lost_by_chain": lost,
        "ignore_regions": n_regions,
    }
