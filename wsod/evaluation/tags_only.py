"""What can be judged without boxes, and which images have boxes at all.

Data with image-level tags only (``wsod data --format csv`` without ``--boxes``) writes gt files
with ``info.has_boxes: false``; with ``--boxes`` for some images only, ``info.boxed_images``
lists the ids of the images whose boxes were given. The flag travels in the data (the gt file's
``info``), not in the pipeline: the same pipeline runs on boxed and tags-only data, and only the
data stage knows which it read. Evaluation and the report read it here:

- :func:`box_coverage` — ``"all"``, ``"subset"`` or ``"none"`` of a gt file's images;
- :func:`restrict` — a COCO dict (gt or pseudo labels) cut down to some image ids, so every
  box metric of a subset is the usual code on a smaller file;
- :func:`images_per_class` — tagged images per class of a weak-label split;
- :func:`firing` — where a detector fires: its top box per image and class above a score;
- :func:`tag_hits` — per class, the share of tagged (and untagged) images where a detector
  fires: checked against the tags, no boxes needed;
- :func:`agreement` — per class, how often two detectors fire on the same images and how much
  their top boxes overlap (mean IoU): agreement, not accuracy.

Plain numpy on dicts already read; boxes are ``x1, y1, x2, y2`` from
:func:`wsod.contracts.detections_by_image`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from wsod.contracts import category_names, detections_by_image
from wsod.utils.boxes import box_iou

ALL, SUBSET, NONE = "all", "subset", "none"


def box_coverage(gt: Mapping) -> dict[str, Any]:
    """Which images of a gt dict have ground-truth boxes.

    ``info.has_boxes`` false: none; ``info.boxed_images`` (ids): those; else all (VOC, demo and
    gt files written before the flag existed).

    Returns:
        ``{"coverage": "all" | "subset" | "none", "num_images", "num_boxed_images",
        "boxed_images": sorted ids or None (all)}``.
    """
    info = gt.get("info") or {}
    ids = [int(im["id"]) for im in gt["images"]]
    if info.get("has_boxes") is False:
        boxed: list[int] | None = []
    elif info.get("boxed_images") is not None:
        boxed = sorted(set(int(i) for i in info["boxed_images"]) & set(ids))
    else:
        boxed = None
    if boxed is None or len(boxed) == len(ids):
        coverage, boxed = ALL, None
    else:
        coverage = SUBSET if boxed else NONE
    return {
        "coverage": coverage,
        "num_images": len(ids),
        "num_boxed_images": len(ids) if boxed is None else len(boxed),
        "boxed_images": boxed,
    }


def restrict(coco: Mapping, image_ids: Iterable[int] | None) -> dict:
    """A COCO dict (gt or pseudo labels) with only ``image_ids``' images and annotations
    (``None``: unchanged). ``info`` records the subset's size."""
    if image_ids is None:
        return dict(coco)
    keep = {int(i) for i in image_ids}
    out = dict(coco)
    out["images"] = [im for im in coco["images"] if int(im["id"]) in keep]
    out["annotations"] = [a for a in coco.get("annotations", []) if int(a["image_id"]) in keep]
    out["info"] = {**(coco.get("info") or {}), "subset_of_images": len(coco["images"])}
    return out


def restrict_detections(dets: Sequence[Mapping], image_ids: Iterable[int] | None) -> list:
    """The detections on ``image_ids`` only (``None``: all)."""
    if image_ids is None:
        return list(dets)
    keep = {int(i) for i in image_ids}
    return [d for d in dets if int(d["image_id"]) in keep]


def images_per_class(split: Mapping) -> dict[str, int]:
    """``{class name: images tagged with it}`` of a weak-label split, in category-id order."""
    counts = Counter(int(c) for im in split["images"] for c in im["labels"])
    return {name: counts[k] for k, name in enumerate(category_names(split), 1)}


def firing(dets: Sequence[Mapping], score_thr: float) -> dict[int, dict[int, np.ndarray]]:
    """Where a detector fires: ``{image_id: {class id: its top box (4,) x1y1x2y2}}`` over the
    detections scoring >= ``score_thr``. Small (one box per image and class), so a large
    detections file can be dropped once this is taken."""
    out: dict[int, dict[int, np.ndarray]] = {}
    for img, g in detections_by_image(dets).items():
        keep = g["scores"] >= score_thr
        order = np.argsort(-g["scores"][keep], kind="stable")
        boxes, labels = g["bboxes"][keep][order], g["labels"][keep][order]
        top: dict[int, np.ndarray] = {}
        for box, c in zip(boxes, labels, strict=True):
            top.setdefault(int(c), box)
        out[int(img)] = top
    return out


def _share(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def tag_hits(split: Mapping, fires: Mapping[int, Mapping[int, Any]]) -> dict[str, Any]:
    """Per class, how often a detector fires (:func:`firing`) on the images tagged with the
    class and on the others.

    Args:
        split: weak-label split (``images`` with ``labels``, ``categories``).
        fires: :func:`firing` of the detector's COCO results on that split.

    Returns:
        ``{"fires_tagged", "fires_untagged" (overall shares), "per_class": {class name:
        {"tagged", "untagged", "fires_tagged", "fires_untagged"}}}``; a share is None when its
        denominator is 0.
    """
    per_class, tot = {}, np.zeros(4, int)  # hits tagged, tagged, hits untagged, untagged
    for k, name in enumerate(category_names(split), 1):
        n = np.zeros(4, int)
        for im in split["images"]:
            hit = k in fires.get(int(im["id"]), {})
            tagged = k in im["labels"]
            n += (hit and tagged, tagged, hit and not tagged, not tagged)
        tot += n
        per_class[name] = {
            "tagged": int(n[1]),
            "untagged": int(n[3]),
            "fires_tagged": _share(n[0], n[1]),
            "fires_untagged": _share(n[2], n[3]),
        }
    return {
        "fires_tagged": _share(tot[0], tot[1]),
        "fires_untagged": _share(tot[2], tot[3]),
        "per_class": per_class,
    }


def agreement(split: Mapping, fa: Mapping, fb: Mapping) -> dict[str, Any]:
    """Per class, the agreement of two detectors (their :func:`firing`) on a split's images.

    ``both / either``: of the images where at least one fires on the class, the share where
    both do; ``mean_iou``: over the images where both fire, the mean IoU of their top-scoring
    boxes of the class.

    Returns:
        ``{"both_of_either", "mean_iou" (over all classes' pairs), "per_class": {class name:
        {"either", "both", "both_of_either", "mean_iou"}}}``.
    """
    ids = [int(im["id"]) for im in split["images"]]
    per_class, all_ious, tot = {}, [], np.zeros(2, int)
    for k, name in enumerate(category_names(split), 1):
        either = both = 0
        ious = []
        for i in ids:
            a, b = fa.get(i, {}).get(k), fb.get(i, {}).get(k)
            either += a is not None or b is not None
            if a is not None and b is not None:
                both += 1
                ious.append(float(box_iou(a, b)[0, 0]))
        tot += (either, both)
        all_ious += ious
        per_class[name] = {
            "either": either,
            "both": both,
            "both_of_either": _share(both, either),
            "mean_iou": round(float(np.mean(ious)), 6) if ious else None,
        }
    return {
        "both_of_either": _share(tot[1], tot[0]),
        "mean_iou": round(float(np.mean(all_ious)), 6) if all_ious else None,
        "per_class": per_class,
    }
