"""Localisation quality of boxes against reference boxes: CorLoc and box precision / recall.

DIAGNOSIS ONLY. This module reads ground-truth boxes (``read_reference_boxes``) to measure how
good pseudo labels or detections are; nothing computed here may feed back into choosing pseudo
labels (the de-noise stage only reports these numbers, it never selects boxes with them).

Plain numpy on arrays (boxes float x1y1x2y2, pixels), one row per box with its image id, so the
same code scores pseudo labels, raw detections and the strong detector's output.

Conventions (VOC devkit): a box hits a reference box when IoU > ``iou_thr`` (strictly).
Precision / recall match greedily per (image, class) in score order, each reference box at most
once; a box whose best match is an ``ignore`` (difficult) reference box counts neither as
true nor as false positive, and ignored reference boxes are not counted in recall.
CorLoc (Deselaers et al.; as in OICR/PCL): per class, the share of images labelled with the class
whose top-scoring box of that class hits a reference box of the class (ignore flags not used);
the mean over classes is the headline number.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from wsod.evaluation.gt import gt_to_arrays, load_gt
from wsod.utils.boxes import box_iou


def read_reference_boxes(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read an eval-only COCO instances file into flat arrays (diagnostics / evaluation only).

    Returns:
        :func:`wsod.evaluation.gt.gt_to_arrays` of the validated file: ``image_ids``,
        ``bboxes`` (M,4) x1y1x2y2, ``labels``, ``ignore`` (the one ignore rule,
        :func:`wsod.contracts.is_ignored`), ``image_set``.
    """
    return gt_to_arrays(load_gt(path))


def _groups(image_ids: np.ndarray, labels: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """(image, class) -> indices, one stable sort."""
    if len(image_ids) == 0:
        return {}
    order = np.lexsort((labels, image_ids))
    keys = np.stack([image_ids[order], labels[order]], 1)
    cuts = np.flatnonzero((np.diff(keys, axis=0) != 0).any(1)) + 1
    out = {}
    for seg in np.split(order, cuts):
        out[(int(image_ids[seg[0]]), int(labels[seg[0]]))] = seg
    return out


def match_image_class(
    pred_bboxes: np.ndarray,
    pred_scores: np.ndarray,
    gt_bboxes: np.ndarray,
    gt_ignore: np.ndarray | None = None,
    iou_thr: float = 0.5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy VOC matching of one image and class.

    Args:
        pred_bboxes: (N,4); pred_scores: (N,); gt_bboxes: (M,4); gt_ignore: (M,) bool.

    Returns:
        ``tp`` (N,) bool, ``ignored`` (N,) bool, ``gt_matched`` (M,) bool.
    """
    n, m = len(pred_scores), len(gt_bboxes)
    tp = np.zeros(n, bool)
    ignored = np.zeros(n, bool)
    matched = np.zeros(m, bool)
    if n == 0 or m == 0:
        return tp, ignored, matched
    ign = np.zeros(m, bool) if gt_ignore is None else np.asarray(gt_ignore, bool)
    iou = box_iou(pred_bboxes, gt_bboxes)
    best = iou.argmax(1)
    best_iou = iou[np.arange(n), best]
    for i in np.lexsort((np.arange(n), -np.asarray(pred_scores))):
        if best_iou[i] <= iou_thr:
            continue
        j = best[i]
        if ign[j]:
            ignored[i] = True
        elif not matched[j]:
            matched[j] = True
            tp[i] = True
    return tp, ignored, matched


def _as_rows(
    pred_bboxes, pred_scores, pred_labels, pred_image_ids, gt_bboxes, gt_labels, gt_image_ids
) -> tuple[np.ndarray, ...]:
    """The inputs of :func:`box_precision_recall` / :func:`corloc` as arrays: boxes (N,4) /
    (M,4) float64, scores (N,) float64, labels and image ids int64."""
    pb, gb = (np.asarray(b, np.float64).reshape(-1, 4) for b in (pred_bboxes, gt_bboxes))
    ps = np.asarray(pred_scores, np.float64).reshape(-1)
    pl, pi, gl, gi = (
        np.asarray(v, np.int64).reshape(-1)
        for v in (pred_labels, pred_image_ids, gt_labels, gt_image_ids)
    )
    return pb, ps, pl, pi, gb, gl, gi


def _ratio(a: float, b: float) -> float | None:
    return float(a) / float(b) if b else None


def box_precision_recall(
    pred_bboxes: np.ndarray,
    pred_scores: np.ndarray,
    pred_labels: np.ndarray,
    pred_image_ids: np.ndarray,
    gt_bboxes: np.ndarray,
    gt_labels: np.ndarray,
    gt_image_ids: np.ndarray,
    gt_ignore: np.ndarray | None = None,
    iou_thr: float = 0.5,
) -> dict:
    """Precision and recall of a set of boxes at IoU > ``iou_thr``, per class and overall.

    Args:
        pred_bboxes: (N,4) x1y1x2y2; pred_scores: (N,); pred_labels: (N,) category ids;
            pred_image_ids: (N,).
        gt_bboxes: (M,4) x1y1x2y2; gt_labels: (M,); gt_image_ids: (M,); gt_ignore: (M,) bool.
        iou_thr: a box matches when IoU > iou_thr.

    Returns:
        ``{"overall": stats, "per_class": {category_id: stats}}`` with stats = ``n_pred``
        (boxes not ignored), ``tp``, ``n_gt`` (not ignored), ``precision`` = tp / n_pred and
        ``recall`` = tp / n_gt (None when the denominator is 0). Overall is micro-averaged.
    """
    pb, ps, pl, pi, gb, gl, gi = _as_rows(
        pred_bboxes, pred_scores, pred_labels, pred_image_ids, gt_bboxes, gt_labels, gt_image_ids
    )
    gign = np.zeros(len(gl), bool) if gt_ignore is None else np.asarray(gt_ignore, bool)
    tp = np.zeros(len(ps), bool)
    ignored = np.zeros(len(ps), bool)
    pg, gg = _groups(pi, pl), _groups(gi, gl)
    for key, pidx in pg.items():
        gidx = gg.get(key)
        if gidx is None:
            continue
        t, ig, _ = match_image_class(pb[pidx], ps[pidx], gb[gidx], gign[gidx], iou_thr)
        tp[pidx], ignored[pidx] = t, ig
    classes = sorted(set(pl.tolist()) | set(gl.tolist()))
    per_class = {}
    for c in classes:
        pm = (pl == c) & ~ignored
        n_pred, n_tp = int(pm.sum()), int(tp[pm].sum())
        n_gt = int(((gl == c) & ~gign).sum())
        per_class[c] = _pr(n_pred, n_tp, n_gt)
    n_pred, n_tp, n_gt = int((~ignored).sum()), int(tp.sum()), int((~gign).sum())
    return {"overall": _pr(n_pred, n_tp, n_gt), "per_class": per_class}


def _pr(n_pred: int, n_tp: int, n_gt: int) -> dict:
    return {
        "n_pred": n_pred,
        "tp": n_tp,
        "n_gt": n_gt,
        "precision": _ratio(n_tp, n_pred),
        "recall": _ratio(n_tp, n_gt),
    }


def corloc(
    pred_bboxes: np.ndarray,
    pred_scores: np.ndarray,
    pred_labels: np.ndarray,
    pred_image_ids: np.ndarray,
    gt_bboxes: np.ndarray,
    gt_labels: np.ndarray,
    gt_image_ids: np.ndarray,
    pairs: np.ndarray | None = None,
    iou_thr: float = 0.5,
) -> dict:
    """Correct localisation: per class, share of labelled images whose top box hits the class.

    Args:
        pred_*: as in :func:`box_precision_recall` (N rows).
        gt_*: reference boxes (M rows).
        pairs: (K,2) int (image_id, category_id) labelled pairs to score; default: every pair
            that has a reference box. Pairs with no reference box of the class (an image-level
            label without a box in the export) cannot be scored: they are left out and counted
            in ``n_pairs_without_gt``. A pair with no predicted box of the class is a miss.
        iou_thr: hit when IoU > iou_thr.

    Returns:
        ``{"mean": mean over classes, "overall": hits / pairs over all pairs,
        "per_class": {category_id: {"n": pairs, "hits": int, "corloc": float}},
        "n_pairs": int, "n_pairs_without_gt": int}``. Tie between equal top scores: the box
        earlier in the input wins.
    """
    pb, ps, pl, pi, gb, gl, gi = _as_rows(
        pred_bboxes, pred_scores, pred_labels, pred_image_ids, gt_bboxes, gt_labels, gt_image_ids
    )
    gg = _groups(gi, gl)
    if pairs is None:
        pairs_l = sorted(gg)
    else:
        pairs_l = sorted({(int(a), int(b)) for a, b in np.asarray(pairs, np.int64).reshape(-1, 2)})
    # top box per (image, class): sort by image, class, -score, position; first of each group
    top: dict[tuple[int, int], int] = {}
    if len(ps):
        order = np.lexsort((np.arange(len(ps)), -ps, pl, pi))
        k = np.stack([pi[order], pl[order]], 1)
        first = np.r_[True, (np.diff(k, axis=0) != 0).any(1)]
        for i in order[first]:
            top[(int(pi[i]), int(pl[i]))] = int(i)
    per: dict[int, list[int]] = {}
    without = 0
    for key in pairs_l:
        gidx = gg.get(key)
        if gidx is None:
            without += 1
            continue
        i = top.get(key)
        hit = i is not None and bool((box_iou(pb[i : i + 1], gb[gidx]) > iou_thr).any())
        per.setdefault(key[1], [0, 0])
        per[key[1]][0] += 1
        per[key[1]][1] += int(hit)
    per_class = {c: {"n": n, "hits": h, "corloc": h / n} for c, (n, h) in sorted(per.items())}
    n_all = sum(v["n"] for v in per_class.values())
    hits_all = sum(v["hits"] for v in per_class.values())
    return {
        "mean": float(np.mean([v["corloc"] for v in per_class.values()])) if per_class else None,
        "overall": _ratio(hits_all, n_all),
        "per_class": per_class,
        "n_pairs": n_all,
        "n_pairs_without_gt": without,
    }


def localization_quality(
    pred: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    pairs: np.ndarray,
    n_images: int,
    iou_thr: float = 0.5,
) -> dict:
    """Precision, recall, CorLoc and boxes per image of one set of boxes (diagnosis only).

    Args:
        pred: flat arrays ``image_ids``, ``bboxes`` (N,4), ``scores``, ``labels``.
        ref: from :func:`read_reference_boxes` (restricted to the evaluated images).
        pairs: (K,2) labelled (image_id, category_id) pairs.
        n_images: number of evaluated images (denominator of boxes per image).

    Returns:
        ``{"overall": {precision, recall, corloc, corloc_overall, boxes_per_image, n_pred, tp,
        n_gt}, "per_class": {category_id: {precision, recall, corloc, n_pred, tp, n_gt,
        boxes_per_image}}, "n_pairs_without_gt": int}`` (``boxes_per_image`` per class counts
        over the images labelled with the class).
    """
    args = (pred["bboxes"], pred["scores"], pred["labels"], pred["image_ids"])
    gargs = (ref["bboxes"], ref["labels"], ref["image_ids"])
    pr = box_precision_recall(*args, *gargs, gt_ignore=ref.get("ignore"), iou_thr=iou_thr)
    cl = corloc(*args, *gargs, pairs=pairs, iou_thr=iou_thr)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    n_lab = {
        int(c): int(n) for c, n in zip(*np.unique(pairs[:, 1], return_counts=True), strict=True)
    }
    per_class = {}
    for c in sorted(set(pr["per_class"]) | set(cl["per_class"]) | set(n_lab)):
        s = dict(pr["per_class"].get(c, _pr(0, 0, 0)))
        s["corloc"] = cl["per_class"].get(c, {}).get("corloc")
        s["boxes_per_image"] = _ratio(s["n_pred"], n_lab.get(c, 0))
        per_class[c] = s
    overall = dict(pr["overall"])
    overall.update(
        corloc=cl["mean"],
        corloc_overall=cl["overall"],
        boxes_per_image=_ratio(len(pred["scores"]), n_images),
    )
    return {
        "overall": overall,
        "per_class": per_class,
        "n_pairs_without_gt": cl["n_pairs_without_gt"],
    }
