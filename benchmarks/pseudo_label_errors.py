"""Break pseudo labels down by how they fail against the ground truth (a diagnostic, not a test).

For every pseudo box (class c, image i), against the ground-truth boxes of class c in image i:

* ``correct``: IoU >= 0.5 with one of them;
* ``too big, 2+ objects``: holds >= 70 % of the area of two or more of them;
* ``too big, 1 object``: holds >= 70 % of one of them (and IoU < 0.5);
* ``part``: >= 70 % of the box lies inside one of them;
* ``misplaced``: 0.1 < best IoU < 0.5;
* ``background``: best IoU <= 0.1 (background or another class's object);
* ``label without box``: the image has no box of class c (the split lists c as present).

The first matching row wins, in this order. It reads the **training ground truth**
(``train_gt.json``): a diagnostic of the pseudo labels after the fact, never a training input.

Usage::

    .venv/bin/python benchmarks/pseudo_label_errors.py \\
        --pseudo work_dirs/voc07_cpu/denoise/pseudo_train.json \\
        --gt work_dirs/voc07_cpu/data/train_gt.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import xywh_to_xyxy  # noqa: E402
from wsod.utils.boxes import box_area, box_intersection, box_iou  # noqa: E402

ROWS = (
    "correct",
    "too big, 1 object",
    "too big, 2+ objects",
    "part",
    "misplaced",
    "background",
    "label without box",
)


def classify(box: np.ndarray, gts: np.ndarray, cover: float = 0.7) -> str:
    """The error type of one x1y1x2y2 ``box`` against the (N, 4) boxes ``gts`` of its class."""
    if len(gts) == 0:
        return "label without box"
    inter = box_intersection(box, gts)[0]
    iou = box_iou(box, gts)[0]
    if iou.max() >= 0.5:
        return "correct"
    held = int((inter >= cover * np.maximum(box_area(gts), 1e-9)).sum())
    if held >= 2:
        return "too big, 2+ objects"
    if held == 1:
        return "too big, 1 object"
    if (inter >= cover * max(box_area(box)[0], 1e-9)).any():
        return "part"
    return "misplaced" if iou.max() > 0.1 else "background"


def breakdown(pseudo: dict, gt: dict) -> Counter:
    boxes = defaultdict(list)
    for a in gt["annotations"]:
        boxes[(a["image_id"], a["category_id"])].append(a["bbox"])
    return Counter(
        classify(
            xywh_to_xyxy(a["bbox"])[0],
            xywh_to_xyxy(boxes.get((a["image_id"], a["category_id"]), [])),
        )
        for a in pseudo["annotations"]
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pseudo", required=True, help="pseudo labels (COCO instances json)")
    ap.add_argument("--gt", required=True, help="the same split's <split>_gt.json")
    args = ap.parse_args(argv)
    with open(args.pseudo) as f:
        pseudo = json.load(f)
    with open(args.gt) as f:
        gt = json.load(f)
    counts = breakdown(pseudo, gt)
    total = sum(counts.values())
    print(f"{args.pseudo}: {total} pseudo boxes against {args.gt}")
    print(f"{'pseudo box vs the real boxes of its class':<45} {'boxes':>6} {'share':>7}")
    for row in ROWS:
        print(f"{row:<45} {counts[row]:>6} {100 * counts[row] / max(total, 1):>6.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
