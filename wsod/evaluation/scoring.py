"""Score COCO results against a gt dict into the json-ready entries of ``metrics.json``.

Plain functions over dicts already read (the evaluate stage reads and writes the files):

- :func:`score_detections` — VOC AP (11-point and area) and COCO AP of one detector, per class
  with a downsampled PR curve;
- :func:`localization_entry` — CorLoc (and box precision / recall) of boxes on train images;
- :func:`pseudo_label_entry` — pseudo labels scored as a detector plus their localisation;
- :func:`ratios` — every detector against ``weak`` (``"<name>/weak"``, and whether it lowered
  mAP).

Boxes are converted once, by :func:`wsod.contracts.detections_to_arrays` (detections) and
:mod:`wsod.evaluation.gt` (ground truth, with the one ignore rule).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from wsod.contracts import detections_by_image, detections_to_arrays, pseudo_label_detections
from wsod.evaluation.coco import coco_ap
from wsod.evaluation.gt import class_ids, class_names, gt_by_image, gt_to_arrays
from wsod.evaluation.localization import box_precision_recall, corloc
from wsod.evaluation.voc import eval_voc, interpolated_pr


def json_ready(x: Any) -> Any:
    """Round floats for json (6 decimals); nan/inf become None; numpy scalars/arrays -> python."""
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if not math.isfinite(x) else round(x, 6)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, Mapping):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [json_ready(v) for v in x]
    return x


def score_detections(
    gt: Mapping,
    dets: Sequence[Mapping],
    *,
    iou_thr: float = 0.5,
    pr_points: int = 101,
    with_coco: bool = True,
) -> dict[str, Any]:
    """VOC (both modes) and COCO AP of one COCO results list against a gt dict (json-ready).

    Args:
        gt: COCO instances dict of the evaluated split.
        dets: COCO results list (xywh).
        iou_thr: VOC IoU threshold.
        pr_points: recall levels of the stored PR curves.
        with_coco: also run pycocotools' AP 0.50:0.95.

    Returns:
        ``{"num_detections", "mAP_11points", "mAP_area", "coco": {...}, "per_class": {name:
        {"class_id", "num_gt", "num_dets", "num_tp", "ap_11points", "ap_area", "coco_ap",
        "max_recall", "pr": {"recall": [...], "precision": [...]}}}}``.
    """
    names = class_names(gt)
    voc = eval_voc(detections_by_image(dets), gt_by_image(gt), class_ids(gt), iou_thr=iou_thr)
    coco = coco_ap(gt, dets) if with_coco else None
    per_class = {}
    for cid, r in voc["per_class"].items():
        levels, prec = interpolated_pr(r["recall"], r["precision"], pr_points)
        per_class[names[cid]] = {
            "class_id": cid,
            "num_gt": r["num_gt"],
            "num_dets": r["num_dets"],
            "num_tp": r["num_tp"],
            "ap_11points": r["ap"]["11points"],
            "ap_area": r["ap"]["area"],
            "coco_ap": None if coco is None else coco["per_class"].get(cid),
            "max_recall": r["max_recall"],
            "pr": {"recall": np.round(levels, 4), "precision": np.round(prec, 4)},
        }
    out: dict[str, Any] = {
        "num_detections": len(dets),
        "mAP_11points": voc["mAP"]["11points"],
        "mAP_area": voc["mAP"]["area"],
    }
    if coco is not None:
        out["coco"] = {k: v for k, v in coco.items() if k not in ("per_class", "log")}
    out["per_class"] = per_class
    return json_ready(out)


def localization_entry(
    dets: Sequence[Mapping], gt: Mapping, iou_thr: float = 0.5, with_pr: bool = False
) -> dict[str, Any]:
    """CorLoc (and box precision/recall) of COCO results against a gt dict, json-ready.

    Uses :func:`wsod.evaluation.localization.corloc` / ``box_precision_recall`` (IoU >
    ``iou_thr``; CorLoc over the (image, class) pairs that have a GT box).

    Returns:
        ``{"corloc": mean over classes, "corloc_overall", "n_pairs", ["box_precision",
        "box_recall"], "per_class": {class name: {"corloc", "n", "hits", ["box_precision",
        "box_recall"]}}}``.
    """
    names = class_names(gt)
    p, g = detections_to_arrays(dets), gt_to_arrays(gt)
    pred = (p["bboxes"], p["scores"], p["labels"], p["image_ids"])
    ref = (g["bboxes"], g["labels"], g["image_ids"])
    cl = corloc(*pred, *ref, iou_thr=iou_thr)
    out: dict[str, Any] = {
        "corloc": cl["mean"],
        "corloc_overall": cl["overall"],
        "n_pairs": cl["n_pairs"],
        "per_class": {},
    }
    for c, v in cl["per_class"].items():
        out["per_class"][names.get(int(c), str(c))] = {
            "corloc": v["corloc"],
            "n": v["n"],
            "hits": v["hits"],
        }
    if with_pr:
        pr = box_precision_recall(*pred, *ref, gt_ignore=g["ignore"], iou_thr=iou_thr)
        out["box_precision"] = pr["overall"]["precision"]
        out["box_recall"] = pr["overall"]["recall"]
        for c, v in pr["per_class"].items():
            e = out["per_class"].setdefault(names.get(int(c), str(c)), {})
            e["box_precision"], e["box_recall"] = v["precision"], v["recall"]
    return json_ready(out)


def pseudo_label_entry(
    pl: Mapping, gt: Mapping, *, iou_thr: float = 0.5, pr_points: int = 101
) -> dict[str, Any]:
    """Pseudo labels (COCO instances + score) scored like a detector, plus CorLoc and box
    precision / recall, against the gt of the same (train) images. Json-ready.

    Returns:
        ``{"num_boxes", "num_images", **score_detections (no COCO AP), "corloc",
        "corloc_overall", "n_pairs", "box_precision", "box_recall"}``; ``per_class`` entries
        carry both the AP and the localisation figures.
    """
    dets = pseudo_label_detections(pl)
    entry: dict[str, Any] = {
        "num_boxes": len(dets),
        "num_images": len({d["image_id"] for d in dets}),
    }
    entry.update(score_detections(gt, dets, iou_thr=iou_thr, pr_points=pr_points, with_coco=False))
    loc = localization_entry(dets, gt, iou_thr, with_pr=True)
    for cls, v in loc.pop("per_class").items():
        entry["per_class"].setdefault(cls, {}).update(v)
    entry.update(loc)
    return entry


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 4)


def ratios(detectors: Mapping[str, Mapping]) -> dict[str, dict[str, Any]] | None:
    """``{"<name>/weak": {mAP_11points, mAP_area, coco_AP (ratios), lowered}}`` for every
    detector other than ``weak``; None without a ``weak`` detector."""
    if "weak" not in detectors:
        return None
    weak = detectors["weak"]
    out = {}
    for name, d in detectors.items():
        if name == "weak":
            continue
        r: dict[str, Any] = {k: _ratio(d.get(k), weak.get(k)) for k in ("mAP_11points", "mAP_area")}
        r["coco_AP"] = _ratio(d["coco"]["AP"], weak["coco"]["AP"])
        r["lowered"] = (d["mAP_11points"] or 0) < (weak["mAP_11points"] or 0)
        out[f"{name}/weak"] = r
    return out
