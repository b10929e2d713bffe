"""PASCAL VOC detection metric as plain numpy on arrays (not files), so that detector outputs and
pseudo labels are scored by the same code.

Three functions, as in detectron2's VOC evaluator:

- :func:`average_precision` — AP from a precision/recall curve, VOC07 ``'11points'`` or VOC10+
  ``'area'`` (area under the monotone precision envelope);
- :func:`match_detections` — greedy matching, in one image, of score-sorted detections to ground
  truth of the same class at IoU >= ``iou_thr``;
- :func:`eval_voc` — per-class precision/recall, AP in both modes, and the mean over classes.

Conventions (checked against the installed mmdet 3.3.0, ``mmdet/evaluation/functional/mean_ap.py``,
whose ``eval_map`` our cross-check test calls with ``eval_mode`` pinned):

- Boxes are float ``x1, y1, x2, y2`` 0-based continuous pixels; IoU has no ``+1`` (as
  ``eval_map(..., use_legacy_coordinate=False)``, its default). Note: mmdet's ``VOCMetric``
  (``mmdet/evaluation/metrics/voc_metric.py``) calls ``eval_map`` with
  ``use_legacy_coordinate=True`` (the ``+1`` pixel convention) and **does** forward its own
  ``eval_mode`` argument (default ``'11points'``) to ``eval_map``; so to compare with
  ``VOCMetric`` one must set ``eval_mode`` explicitly and expect tiny IoU differences from the
  ``+1``. Our mmengine wrapper :class:`wsod.evaluation.metric.WSODVOCMetric` uses this module.
- A detection is a true positive when its best-overlapping GT box of its class (difficult ones
  included) has IoU >= ``iou_thr`` (``>=``, as mmdet; the VOC devkit uses ``>``), that GT is not
  difficult and not yet taken by a higher-scored detection. A detection whose best GT is
  difficult is ignored (neither TP nor FP); later detections of an already-taken GT
  (duplicates) are false positives; a detection with best IoU below ``iou_thr`` is a false
  positive. Difficult GT boxes do not count in ``num_gt``.
- 11-point AP samples recall thresholds ``np.arange(0, 1 + 1e-3, 0.1)`` exactly as mmdet,
  detectron2 and the VOC devkit do; floating point makes the 0.3, 0.6 and 0.7 thresholds
  slightly larger than the decimal value, so a recall of exactly 3/10 does *not* reach the 0.3
  point.
- A class without (non-difficult) GT boxes gets AP ``nan`` and is excluded from the mean, as
  mmdet's ``eval_map`` excludes classes with ``num_gts == 0``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from wsod.utils.boxes import box_iou

AP_MODES = ("11points", "area")
_EPS = float(np.finfo(np.float32).eps)  # mmdet's guard against 0/0 in precision


def average_precision(recall: np.ndarray, precision: np.ndarray, mode: str = "area") -> float:
    """Average precision of one precision/recall curve.

    Args:
        recall: (N,) recall after each score-sorted detection (non-decreasing).
        precision: (N,) precision after each detection.
        mode: ``'11points'`` (VOC2007: mean of the best precision at recall >= t for the 11
            thresholds t in 0, 0.1, ..., 1, 0 where recall never reaches t) or ``'area'``
            (VOC2010+: area under the precision envelope, the curve made monotone
            non-increasing by taking the max precision to its right).

    Returns:
        AP in [0, 1]. An empty curve (no detections) gives 0.
    """
    rec = np.asarray(recall, dtype=np.float64).ravel()
    prec = np.asarray(precision, dtype=np.float64).ravel()
    if rec.shape != prec.shape:
        raise ValueError(f"recall {rec.shape} and precision {prec.shape} differ in shape")
    if mode == "11points":
        ap = 0.0
        for t in np.arange(0.0, 1.0 + 1e-3, 0.1):
            above = prec[rec >= t]
            ap += above.max() if above.size else 0.0
        return float(ap / 11.0)
    if mode == "area":
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]  # precision envelope
        idx = np.flatnonzero(mrec[1:] != mrec[:-1])
        return float(np.sum((mrec[idx + 1] - mrec[idx]) * mpre[idx + 1]))
    raise ValueError(f"unknown AP mode {mode!r}; use '11points' or 'area'")


def match_detections(
    det_boxes: np.ndarray,
    det_scores: np.ndarray,
    gt_boxes: np.ndarray,
    gt_difficult: np.ndarray | None = None,
    iou_thr: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy VOC matching of one image's detections of one class to its GT boxes of that class.

    Args:
        det_boxes: (N,4) x1y1x2y2 detections.
        det_scores: (N,) scores; higher-scored detections claim GT boxes first.
        gt_boxes: (M,4) x1y1x2y2 ground truth of the same class.
        gt_difficult: (M,) bool; detections matching a difficult box are ignored.
        iou_thr: minimum IoU (inclusive) for a match.

    Returns:
        ``(tp, fp)``: two (N,) bool arrays in the input order; both False for an ignored
        detection.
    """
    det_boxes = np.asarray(det_boxes, dtype=np.float64).reshape(-1, 4)
    gt_boxes = np.asarray(gt_boxes, dtype=np.float64).reshape(-1, 4)
    n, m = len(det_boxes), len(gt_boxes)
    difficult = (
        np.zeros(m, dtype=bool)
        if gt_difficult is None
        else np.asarray(gt_difficult, dtype=bool).reshape(m)
    )
    tp = np.zeros(n, dtype=bool)
    fp = np.ones(n, dtype=bool)
    if n == 0 or m == 0:
        return tp, fp
    # non-difficult boxes first, so that an exact IoU tie goes to a countable box (as mmdet)
    gorder = np.argsort(difficult, kind="stable")
    ious = box_iou(det_boxes, gt_boxes[gorder])
    best = ious.argmax(axis=1)
    best_iou = ious[np.arange(n), best]
    best_difficult = difficult[gorder][best]
    taken = np.zeros(m, dtype=bool)
    for i in np.argsort(-np.asarray(det_scores, dtype=np.float64), kind="stable"):
        if best_iou[i] < iou_thr:
            continue  # stays a false positive
        fp[i] = False
        if best_difficult[i]:
            continue  # ignored
        j = best[i]
        if taken[j]:
            fp[i] = True  # duplicate
        else:
            taken[j] = True
            tp[i] = True
    return tp, fp


def _class_curve(
    scores: np.ndarray, tp: np.ndarray, fp: np.ndarray, num_gt: int
) -> tuple[np.ndarray, np.ndarray]:
    keep = tp | fp  # ignored detections add no point to the curve
    order = np.argsort(-scores[keep], kind="stable")
    ctp = np.cumsum(tp[keep][order], dtype=np.float64)
    cfp = np.cumsum(fp[keep][order], dtype=np.float64)
    recall = ctp / max(num_gt, _EPS)
    precision = ctp / np.maximum(ctp + cfp, _EPS)
    return recall, precision


def eval_voc(
    dets_by_image: Mapping[int, Mapping[str, np.ndarray]],
    gts_by_image: Mapping[int, Mapping[str, np.ndarray]],
    class_ids: Iterable[int],
    iou_thr: float = 0.5,
    modes: Sequence[str] = AP_MODES,
) -> dict[str, Any]:
    """VOC mAP of detections against ground truth, every class at once.

    Args:
        dets_by_image: ``{image_id: {"bboxes": (N,4) x1y1x2y2, "scores": (N,), "labels": (N,)}}``
            (what :func:`wsod.contracts.detections_by_image` returns). Every image id must be in
            ``gts_by_image``.
        gts_by_image: ``{image_id: {"bboxes": (M,4) x1y1x2y2, "labels": (M,),
            "difficult": (M,) bool (optional)}}`` for *every* evaluated image, including images
            without boxes (see :func:`wsod.evaluation.gt.gt_by_image`).
        class_ids: the category ids to evaluate (detections of other ids are ignored).
        iou_thr: IoU threshold of a match.
        modes: AP modes to compute (``'11points'``, ``'area'``).

    Returns:
        ``{"iou_thr", "num_images", "mAP": {mode: float}, "per_class": {class_id: {"num_gt",
        "num_dets", "num_tp", "ap": {mode: float}, "max_recall", "recall": (K,) array,
        "precision": (K,) array}}}``; ``mAP`` averages classes with ``num_gt > 0`` (``nan`` when
        there are none); such classes have AP ``nan``.
    """
    class_ids = [int(c) for c in class_ids]
    unknown = [i for i in dets_by_image if i not in gts_by_image]
    if unknown:
        raise ValueError(
            f"{len(unknown)} detected images have no ground-truth entry, e.g. "
            f"{sorted(unknown)[:5]}; evaluate against the matching split's gt file"
        )
    num_gt, parts = _match_all(dets_by_image, gts_by_image, class_ids, iou_thr)
    per_class = {c: _class_result(parts[c], num_gt[c], modes) for c in class_ids}
    valid = [c for c in class_ids if num_gt[c] > 0]
    mean_ap = {
        m: (float(np.mean([per_class[c]["ap"][m] for c in valid])) if valid else float("nan"))
        for m in modes
    }
    return {
        "iou_thr": float(iou_thr),
        "num_images": len(gts_by_image),
        "mAP": mean_ap,
        "per_class": per_class,
    }


def _match_all(
    dets_by_image: Mapping[int, Mapping[str, np.ndarray]],
    gts_by_image: Mapping[int, Mapping[str, np.ndarray]],
    class_ids: list[int],
    iou_thr: float,
) -> tuple[dict[int, int], dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]]:
    """Match every image, class by class (arguments as :func:`eval_voc`).

    Returns:
        ``(num_gt, parts)``: countable GT boxes per class, and per class one ``(scores, tp,
        fp)`` triple per image with detections of the class, in ``gts_by_image`` order.
    """
    cls_set = set(class_ids)
    num_gt = dict.fromkeys(class_ids, 0)
    parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {c: [] for c in class_ids}
    for img_id, gt in gts_by_image.items():
        g_boxes = np.asarray(gt["bboxes"], dtype=np.float64).reshape(-1, 4)
        g_labels = np.asarray(gt["labels"]).astype(np.int64).ravel()
        g_diff = np.asarray(gt.get("difficult", np.zeros(len(g_labels))), dtype=bool).ravel()
        for c in np.unique(g_labels[~g_diff]):
            if int(c) in cls_set:
                num_gt[int(c)] += int(np.sum((g_labels == c) & ~g_diff))
        det = dets_by_image.get(img_id)
        if det is None or len(det["scores"]) == 0:
            continue
        d_boxes = np.asarray(det["bboxes"], dtype=np.float64).reshape(-1, 4)
        d_scores = np.asarray(det["scores"], dtype=np.float64).ravel()
        d_labels = np.asarray(det["labels"]).astype(np.int64).ravel()
        for c in np.unique(d_labels):
            c = int(c)
            if c not in cls_set:
                continue
            dm, gm = d_labels == c, g_labels == c
            tp, fp = match_detections(d_boxes[dm], d_scores[dm], g_boxes[gm], g_diff[gm], iou_thr)
            parts[c].append((d_scores[dm], tp, fp))
    return num_gt, parts


def _class_result(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], num_gt: int, modes: Sequence[str]
) -> dict[str, Any]:
    """One class's entry of :func:`eval_voc` from its matched ``(scores, tp, fp)`` parts."""
    if parts:
        scores, tp, fp = (np.concatenate(x) for x in zip(*parts, strict=True))
    else:
        scores, tp, fp = np.zeros(0), np.zeros(0, bool), np.zeros(0, bool)
    recall, precision = _class_curve(scores, tp, fp, num_gt)
    has_gt = num_gt > 0
    return {
        "num_gt": num_gt,
        "num_dets": int(len(scores)),
        "num_tp": int(tp.sum()),
        "ap": {
            m: (average_precision(recall, precision, m) if has_gt else float("nan")) for m in modes
        },
        "max_recall": (float(recall[-1]) if len(recall) else 0.0) if has_gt else float("nan"),
        "recall": recall,
        "precision": precision,
    }


def interpolated_pr(
    recall: np.ndarray, precision: np.ndarray, num_points: int = 101
) -> tuple[np.ndarray, np.ndarray]:
    """Downsample a PR curve to ``num_points`` recall levels (COCO style) for plots and json.

    Args:
        recall: (N,) non-decreasing recall.
        precision: (N,) precision.
        num_points: number of recall levels in [0, 1].

    Returns:
        ``(levels, prec)``: (num_points,) recall levels and, at each, the envelope precision (max
        precision at recall >= level; 0 where recall never gets there).
    """
    rec = np.asarray(recall, dtype=np.float64).ravel()
    prec = np.asarray(precision, dtype=np.float64).ravel()
    levels = np.linspace(0.0, 1.0, num_points)
    out = np.zeros(num_points)
    if rec.size:
        env = np.maximum.accumulate(prec[::-1])[::-1]
        idx = np.searchsorted(rec, levels, side="left")
        ok = idx < rec.size
        out[ok] = env[idx[ok]]
    return levels, out
