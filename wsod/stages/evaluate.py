"""Stage ``evaluate``: score detectors (and pseudo labels) against the eval-only ground truth.

Inputs:
    - ``gt``: the eval split's ``<split>_gt.json`` (COCO instances + ``difficult``);
    - ``detections``: ``{name: COCO results json}`` on that split (e.g. ``weak``, ``strong``,
      ``fsd``), all scored on the same images;
    - optional train-side diagnostics: ``train_gt`` (the train split's gt file), with
      ``train_detections`` (CorLoc of each) and ``pseudo_labels`` (precision/recall, CorLoc and
      VOC AP of the pseudo boxes, scored by the same code as detectors).

Output: ``metrics.json`` (atomic, with ``metrics.json.meta.json``): per detector VOC mAP at IoU 0.5
in both 11-point (VOC07) and area (VOC10+) modes, COCO AP 0.50:0.95, per-class AP and a PR curve
per class downsampled to ``pr_points`` recall levels (so the report needs only this file), plus
the split name, the data caveats and ``strong/weak`` ratios.

Invariants: this stage and :mod:`wsod.evaluation.gt` are the only readers of ground-truth boxes;
it runs after training and feeds nothing back into it. ``metrics.json`` says so in ``gt_note``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.contracts import (
    detections_by_image,
    load_detections,
    load_pseudo_labels,
    validate_detections,
    xywh_to_xyxy,
)
from wsod.evaluation.coco import coco_ap
from wsod.evaluation.gt import class_ids, class_names, gt_by_image, load_gt
from wsod.evaluation.voc import eval_voc, interpolated_pr
from wsod.utils.io import write_json_artifact

CAVEATS = (
    "The evaluated split is VOC2007 'val' (half of the official val list), not the official "
    "VOC2007 test set, which is not available here; numbers are not comparable to published "
    "test-set figures.",
    "The shared VOC copy lost the 'difficult' flags: every object counts, including those the "
    "official protocol ignores, so AP here is lower than an official figure would be.",
    "In 166 train and 79 val images a class listed as present (almost always 'person') has no "
    "box in the shared copy, so some objects have no ground-truth box: correct detections of "
    "them count as false positives.",
)
DEMO_CAVEATS = (
    "The evaluated data is the synthetic demo dataset: the numbers test the pipeline, they say "
    "nothing about detection on real images.",
)
GT_NOTE = (
    "Only evaluation reads ground-truth boxes (the eval-only <split>_gt.json files); the "
    "training stages (proposals, weak, denoise, strong) saw image-level labels only. "
    "Train-side figures (CorLoc, pseudo-label quality) are diagnostics computed here, "
    "after training."
)
DETECTOR_ORDER = ("weak", "strong", "fsd")


def named_paths(
    items: Mapping[str, Any] | Sequence[str] | str | None, names: Sequence[str] | None = None
) -> dict[str, Path]:
    """Normalise detector inputs to ``{name: path}``.

    Args:
        items: a mapping ``{name: path}``, or a list of ``"name=path"`` / bare paths (a bare path
            is named by ``names`` at the same position, else by its file stem).
        names: optional names for the list entries, in order.

    Returns:
        Ordered ``{name: Path}``.
    """
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return {str(k): Path(v) for k, v in items.items()}
    if isinstance(items, (str, os.PathLike)):
        items = [items]
    items = list(items)
    if names is not None and len(names) != len(items):
        raise ValueError(f"{len(names)} names for {len(items)} detection files; give one each")
    out: dict[str, Path] = {}
    for i, item in enumerate(items):
        item = os.fspath(item)
        if "=" in item and not Path(item).exists():
            name, path = item.split("=", 1)
        else:
            name, path = Path(item).stem, item
        if names is not None:
            name = names[i]
        if name in out:
            raise ValueError(
                f"detector name {name!r} given twice; use name=path to tell them apart"
            )
        out[name] = Path(path)
    return out


def _num(x: Any) -> Any:
    """Round floats for json; nan/inf become None."""
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if not math.isfinite(x) else round(x, 6)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, Mapping):
        return {str(k): _num(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_num(v) for v in x]
    return x


def caveats_for(gt: Mapping) -> list[str]:
    """What the evaluated data lacks: :data:`CAVEATS` for VOC (the shared copy), else a note."""
    info = gt.get("info") or {}
    fmt = info.get("format")
    if fmt in (None, "voc"):
        return list(CAVEATS)
    if fmt == "demo":
        return list(DEMO_CAVEATS)
    return [
        f"Custom {fmt} data from {info.get('data_root')}: check its own notes on missing or "
        "ignored boxes; 'difficult' is honoured only where the gt file sets it."
    ]


def _dets_from_pseudo(pl: Mapping) -> list[dict]:
    return [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": a["bbox"],
            "score": float(a.get("score", 1.0)),
        }
        for a in pl["annotations"]
    ]


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
    return _num(out)


def _flat(dets: Sequence[Mapping]) -> tuple[np.ndarray, ...]:
    """COCO results -> (bboxes (N,4) x1y1x2y2, scores, labels, image_ids) flat arrays."""
    if not dets:
        return np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (
        xywh_to_xyxy(np.array([d["bbox"] for d in dets], dtype=np.float64)),
        np.array([d["score"] for d in dets], dtype=np.float64),
        np.array([d["category_id"] for d in dets], dtype=np.int64),
        np.array([d["image_id"] for d in dets], dtype=np.int64),
    )


def _flat_gt(gt: Mapping) -> tuple[np.ndarray, ...]:
    """gt dict -> (bboxes (M,4) x1y1x2y2, labels, image_ids, ignore) flat arrays."""
    anns = gt["annotations"]
    return (
        xywh_to_xyxy(np.array([a["bbox"] for a in anns], dtype=np.float64)),
        np.array([a["category_id"] for a in anns], dtype=np.int64),
        np.array([a["image_id"] for a in anns], dtype=np.int64),
        np.array([bool(a.get("difficult", 0) or a.get("iscrowd", 0)) for a in anns], bool),
    )


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
    from wsod.evaluation.localization import box_precision_recall, corloc

    names = class_names(gt)
    pb, ps, pl, pi = _flat(dets)
    gb, gl, gi, gign = _flat_gt(gt)
    cl = corloc(pb, ps, pl, pi, gb, gl, gi, iou_thr=iou_thr)
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
        pr = box_precision_recall(pb, ps, pl, pi, gb, gl, gi, gt_ignore=gign, iou_thr=iou_thr)
        out["box_precision"] = pr["overall"]["precision"]
        out["box_recall"] = pr["overall"]["recall"]
        for c, v in pr["per_class"].items():
            e = out["per_class"].setdefault(names.get(int(c), str(c)), {})
            e["box_precision"], e["box_recall"] = v["precision"], v["recall"]
    return _num(out)


def _ordered(names: Sequence[str]) -> list[str]:
    first = [n for n in DETECTOR_ORDER if n in names]
    return first + [n for n in names if n not in first]


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 4)


def run(
    gt: str | os.PathLike,
    detections: Mapping[str, Any] | Sequence[str] | str,
    out: str | os.PathLike,
    *,
    names: Sequence[str] | None = None,
    train_gt: str | os.PathLike | None = None,
    train_detections: Mapping[str, Any] | Sequence[str] | str | None = None,
    pseudo_labels: str | os.PathLike | None = None,
    split_name: str | None = None,
    iou_thr: float = 0.5,
    pr_points: int = 101,
) -> dict[str, Any]:
    """Evaluate detectors on an eval split and write ``metrics.json``.

    Args:
        gt: eval split ground truth ``<split>_gt.json``.
        detections: ``{name: results json}`` (or ``"name=path"`` strings / bare paths).
        out: output ``metrics.json`` path.
        names: names for bare detection paths, in order.
        train_gt: train split ground truth, for the train-side diagnostics.
        train_detections: ``{name: results json on the train split}``: CorLoc of each.
        pseudo_labels: pseudo-label json (COCO instances + score) on train images: precision,
            recall, CorLoc and VOC AP against ``train_gt``.
        split_name: name of the evaluated split (default: ``info.split`` of the gt file, else
            the file stem without ``_gt``).
        iou_thr: IoU threshold of VOC AP, CorLoc and pseudo-label precision/recall.
        pr_points: recall levels kept per PR curve.

    Returns:
        The metrics dict written to ``out``.
    """
    started = time.time()
    gt_path = Path(gt)
    gt_data = load_gt(gt_path)
    det_paths = named_paths(detections, names)
    if not det_paths:
        raise ValueError("no detections given; pass --detections name=PATH (e.g. weak=...)")
    split = (
        split_name or (gt_data.get("info") or {}).get("split") or gt_path.stem.removesuffix("_gt")
    )
    inputs = [gt_path]
    result: dict[str, Any] = {
        "split": split,
        "gt": str(gt_path),
        "iou_thr": iou_thr,
        "num_images": len(gt_data["images"]),
        "num_gt_boxes": len(gt_data["annotations"]),
        "classes": [class_names(gt_data)[c] for c in class_ids(gt_data)],
        "caveats": caveats_for(gt_data),
        "gt_note": GT_NOTE,
        "detectors": {},
    }
    for name in _ordered(list(det_paths)):
        path = det_paths[name]
        dets = load_detections(path, gt_data)
        entry = {"file": str(path)}
        entry.update(score_detections(gt_data, dets, iou_thr=iou_thr, pr_points=pr_points))
        result["detectors"][name] = entry
        inputs.append(path)

    dmap = result["detectors"]
    if "weak" in dmap:
        result["ratios"] = {}
        for name in dmap:
            if name == "weak":
                continue
            r = {
                k: _ratio(dmap[name].get(k), dmap["weak"].get(k))
                for k in ("mAP_11points", "mAP_area")
            }
            r["coco_AP"] = _ratio(dmap[name]["coco"]["AP"], dmap["weak"]["coco"]["AP"])
            r["lowered"] = (dmap[name]["mAP_11points"] or 0) < (dmap["weak"]["mAP_11points"] or 0)
            result["ratios"][f"{name}/weak"] = r

    tdet_paths = named_paths(train_detections)
    if (tdet_paths or pseudo_labels) and train_gt is None:
        raise ValueError("train-side diagnostics need --train-gt (the train split's _gt.json)")
    if train_gt is not None:
        tgt = load_gt(train_gt)
        inputs.append(Path(train_gt))
        train: dict[str, Any] = {
            "gt": str(train_gt),
            "split": (tgt.get("info") or {}).get("split")
            or Path(train_gt).stem.removesuffix("_gt"),
            "num_images": len(tgt["images"]),
            "detectors": {},
        }
        for name, path in tdet_paths.items():
            dets = load_detections(path, tgt)
            entry = {"file": str(path), "num_detections": len(dets)}
            entry.update(localization_entry(dets, tgt, iou_thr))
            train["detectors"][name] = entry
            inputs.append(path)
        if pseudo_labels is not None:
            pl = load_pseudo_labels(pseudo_labels)
            pdets = _dets_from_pseudo(pl)
            validate_detections(pdets, tgt, where=str(pseudo_labels))
            entry = {
                "file": str(pseudo_labels),
                "num_boxes": len(pdets),
                "num_images": len({d["image_id"] for d in pdets}),
            }
            entry.update(
                score_detections(tgt, pdets, iou_thr=iou_thr, pr_points=pr_points, with_coco=False)
            )
            loc = localization_entry(pdets, tgt, iou_thr, with_pr=True)
            for cls, v in loc.pop("per_class").items():
                entry["per_class"].setdefault(cls, {}).update(v)
            entry.update(loc)
            train["pseudo_labels"] = entry
            inputs.append(Path(pseudo_labels))
        result["train"] = train

    write_json_artifact(
        out,
        result,
        indent=1,
        stage="evaluate",
        inputs=inputs,
        started=started,
        config={
            "gt": gt_path,
            "detections": det_paths,
            "train_gt": train_gt,
            "train_detections": tdet_paths,
            "pseudo_labels": pseudo_labels,
            "split_name": split,
            "iou_thr": iou_thr,
            "pr_points": pr_points,
        },
    )
    return result
