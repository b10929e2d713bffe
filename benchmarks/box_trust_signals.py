"""LABELLED DIAGNOSTIC: which signal of the black box's own detections tells a right pseudo box
from a wrong one (issue 53, part 2: "which images and classes to trust").

For every labelled (image, class) of the training split that has a detection of its class, the
top-1 box (the box ``top1`` de-noising keeps) is scored by several signals computed from the
**detections alone** (what a de-noise strategy could use), and judged right or wrong against the
**training ground truth** (IoU >= 0.5 with a real box of its class): the ground truth only
grades, it chooses nothing. Printed: each signal's ROC-AUC over all top-1 boxes and its mean AUC
within a class (how well it ranks the boxes of one class: what a per-class cut can use), and
the Pearson r of its per-class mean with the per-class precision (what a per-class weight can
use); then precision and recall of the kept top-1 boxes when the most trusted share is kept,
one global cut on the score against the same share per class.

Signals (higher = trusted more; each top-1 box of class c in image i):

- ``score``: its score.
- ``class_rank``: its score's percentile among the top-1 scores of class c (a per-class cut).
- ``margin``: its score minus the best score of a class-c box of image i overlapping it by
  IoU < 0.3 (0 if none): how far ahead it is of a second, separate place.
- ``agreement``: the score-weighted mean IoU with it of the other class-c boxes among the
  ``--top`` best of image i: do the strong boxes of the class point at one place.
- ``few_labels``: minus the number of labelled classes in image i.
- ``small``: minus its area as a share of the image (too-big boxes are a known failure).

Usage::

    .venv/bin/python benchmarks/box_trust_signals.py \\
        --detections work_dirs/voc07_cpu/weak/train_dets.json \\
        --split work_dirs/voc07_cpu/data/train.json \\
        --gt work_dirs/voc07_cpu/data/train_gt.json [--out signals.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import xywh_to_xyxy  # noqa: E402
from wsod.evaluation.gt import class_names, gt_by_image  # noqa: E402
from wsod.utils.boxes import box_area, box_iou  # noqa: E402

SIGNALS = ("score", "class_rank", "margin", "agreement", "few_labels", "small")
SEPARATE_IOU = 0.3  # below this IoU a box of the class points at another place
CORRECT_IOU = 0.5
KEEP_SHARES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)


def auc(signal: np.ndarray, right: np.ndarray) -> float | None:
    """ROC-AUC of ``signal`` for ``right`` (Mann-Whitney, ties count half); None if one class."""
    pos, n = int(right.sum()), len(right)
    if pos == 0 or pos == n:
        return None
    ranks = rankdata(signal)
    return float((ranks[right].sum() - pos * (pos + 1) / 2) / (pos * (n - pos)))


def group_signals(boxes: np.ndarray, scores: np.ndarray, top: int) -> dict[str, float]:
    """Signals of the top-1 box of one (image, class) group (boxes sorted by score, descending)."""
    first = boxes[:1]
    iou = box_iou(first, boxes[1:])[0] if len(boxes) > 1 else np.zeros(0)
    rest = scores[1:]
    apart = rest[iou < SEPARATE_IOU]
    near_iou, near_w = iou[: top - 1], rest[: top - 1]
    return {
        "score": float(scores[0]),
        "margin": float(scores[0] - (apart.max() if len(apart) else 0.0)),
        "agreement": float((near_iou * near_w).sum() / near_w.sum()) if near_w.sum() > 0 else 0.0,
    }


def collect(detections: list, split: dict, gt: dict, top: int) -> list[dict]:
    """One row per labelled (image, class) with a detection: its signals and whether it is right."""
    images = {int(im["id"]): im for im in split["images"]}
    real = gt_by_image(gt)
    groups: dict[tuple[int, int], list] = defaultdict(list)
    for d in detections:
        im = images.get(int(d["image_id"]))
        if im is not None and int(d["category_id"]) in set(im["labels"]):
            groups[(int(d["image_id"]), int(d["category_id"]))].append(d)
    rows = []
    for (image_id, cls), dets in groups.items():
        order = sorted(range(len(dets)), key=lambda k: -dets[k]["score"])  # stable: ties by input
        boxes = xywh_to_xyxy(np.array([dets[k]["bbox"] for k in order], np.float64))
        scores = np.array([dets[k]["score"] for k in order], np.float64)
        im = images[image_id]
        row = group_signals(boxes, scores, top)
        row["few_labels"] = -float(len(set(im["labels"])))
        row["small"] = -float(box_area(boxes[:1])[0] / (im["width"] * im["height"]))
        g = real.get(image_id)
        cls_boxes = g["bboxes"][g["labels"] == cls] if g is not None else np.zeros((0, 4))
        best = box_iou(boxes[:1], cls_boxes).max() if len(cls_boxes) else 0.0
        rows.append({"image_id": image_id, "class": cls, "right": bool(best >= CORRECT_IOU), **row})
    by_class = defaultdict(list)
    for r in rows:
        by_class[r["class"]].append(r)
    for members in by_class.values():
        pct = rankdata([r["score"] for r in members]) / len(members)
        for r, p in zip(members, pct, strict=True):
            r["class_rank"] = float(p)
    return rows


def signal_table(rows: list[dict]) -> dict[str, dict]:
    """Per signal: overall AUC, mean within-class AUC, r(per-class mean, per-class precision)."""
    right = np.array([r["right"] for r in rows])
    classes = np.array([r["class"] for r in rows])
    out = {}
    for s in SIGNALS:
        v = np.array([r[s] for r in rows], np.float64)
        within = [auc(v[classes == c], right[classes == c]) for c in np.unique(classes)]
        within = [a for a in within if a is not None]
        means = [v[classes == c].mean() for c in np.unique(classes)]
        prec = [right[classes == c].mean() for c in np.unique(classes)]
        r_class = float(np.corrcoef(means, prec)[0, 1]) if np.std(means) > 0 else None
        out[s] = {
            "auc": auc(v, right),
            "auc_within_class": float(np.mean(within)) if within else None,
            "r_class_mean_vs_precision": r_class,
        }
    return out


def keep_curve(rows: list[dict], signal: str, per_class: bool, n_objects: int) -> list[dict]:
    """Precision / recall of the kept top-1 boxes when the most trusted share is kept."""
    v = np.array([r[signal] for r in rows], np.float64)
    right = np.array([r["right"] for r in rows])
    classes = np.array([r["class"] for r in rows])
    curve = []
    for share in KEEP_SHARES:
        keep = np.zeros(len(rows), bool)
        parts = (
            [np.flatnonzero(classes == c) for c in np.unique(classes)]
            if per_class
            else [np.arange(len(rows))]
        )
        for idx in parts:
            n = int(round(share * len(idx)))
            keep[idx[np.argsort(-v[idx], kind="stable")[:n]]] = True
        curve.append(
            {
                "share": share,
                "boxes": int(keep.sum()),
                "precision": float(right[keep].mean()) if keep.any() else None,
                "recall": float(right[keep].sum() / n_objects),
            }
        )
    return curve


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--detections", required=True, help="the black box's train detections (COCO results)"
    )
    ap.add_argument(
        "--split", required=True, help="the split's image list with labels (data/train.json)"
    )
    ap.add_argument(
        "--gt", required=True, help="the split's ground truth (data/train_gt.json), grading only"
    )
    ap.add_argument(
        "--top", type=int, default=10, help="boxes of a class the agreement signal reads [10]"
    )
    ap.add_argument("--out", help="also write the table, curves and per-class precision as json")
    args = ap.parse_args(argv)
    with open(args.detections) as f:
        detections = json.load(f)
    with open(args.split) as f:
        split = json.load(f)
    with open(args.gt) as f:
        gt = json.load(f)
    rows = collect(detections, split, gt, args.top)
    if not rows:
        raise SystemExit(f"{args.detections}: no detection of a labelled class in {args.split}")
    n_objects = len([a for a in gt["annotations"] if not a.get("iscrowd")])
    right = np.array([r["right"] for r in rows])
    print(
        f"{len(rows)} labelled (image, class) top-1 boxes, {right.mean():.1%} right; {n_objects} objects"
    )
    table = signal_table(rows)
    print(f"{'signal':<12} {'AUC':>6} {'AUC in class':>13} {'r(class mean, precision)':>25}")
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    for s, t in table.items():
        print(
            f"{s:<12} {fmt(t['auc']):>6} {fmt(t['auc_within_class']):>13} {fmt(t['r_class_mean_vs_precision']):>25}"
        )
    curves = {}
    for s in SIGNALS:
        for per_class in (False, True):
            name = f"{s}{' per class' if per_class else ''}"
            curves[name] = keep_curve(rows, s, per_class, n_objects)
    print("\nkept share -> precision / recall of the kept top-1 boxes")
    print(f"{'cut':<22}" + "".join(f"{s:>14}" for s in KEEP_SHARES))
    for name, curve in curves.items():
        cells = "".join(f"{c['precision']:>7.1%}/{c['recall']:<6.1%}" for c in curve)
        print(f"{name:<22}{cells}")
    names = class_names(gt)
    per_class = {
        names[c]: float(right[[r["class"] == c for r in rows]].mean())
        for c in sorted({r["class"] for r in rows})
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(
                {
                    "signals": table,
                    "curves": curves,
                    "class_precision": per_class,
                    "top1_boxes": len(rows),
                    "objects": n_objects,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
