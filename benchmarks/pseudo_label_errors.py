"""Break pseudo labels down by how they fail against the ground truth (a diagnostic, not a test).

For every pseudo box (class c, image i), against the ground-truth boxes of class c in image i
(difficult ones included), the first matching row of
:data:`wsod.denoise.diagnostics.ERROR_ROWS` (``correct``: IoU >= 0.5; ``too big, 2+ objects``:
holds >= 70 % of the area of two or more of them; ``too big, 1 object``: of one; ``part``:
>= 70 % of the box lies inside one; ``misplaced``: 0.1 < best IoU < 0.5; ``background``; ``label
without box``). Ignore regions (``iscrowd`` 1) are not pseudo boxes and are not counted. The same
breakdown is a column pair of ``wsod denoise --ablate``'s table.

It reads the **training ground truth** (``train_gt.json``): a diagnostic of the pseudo labels
after the fact, never a training input.

Usage::

    .venv/bin/python benchmarks/pseudo_label_errors.py \\
        --pseudo work_dirs/voc07_cpu/denoise/pseudo_train.json \\
        --gt work_dirs/voc07_cpu/data/train_gt.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import xywh_to_xyxy  # noqa: E402
from wsod.denoise.diagnostics import ERROR_ROWS, error_breakdown  # noqa: E402
from wsod.evaluation.gt import gt_to_arrays  # noqa: E402


def breakdown(pseudo: dict, gt: dict) -> dict:
    """:func:`wsod.denoise.diagnostics.error_breakdown` of a pseudo-label dict against a
    ground-truth dict (both COCO instances)."""
    anns = [a for a in pseudo["annotations"] if not a.get("iscrowd")]
    flat = {
        "image_ids": np.array([a["image_id"] for a in anns], np.int64),
        "labels": np.array([a["category_id"] for a in anns], np.int64),
        "bboxes": xywh_to_xyxy(np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4)),
    }
    return error_breakdown(flat, gt_to_arrays(gt))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pseudo", required=True, help="pseudo labels (COCO instances json)")
    ap.add_argument("--gt", required=True, help="the same split's <split>_gt.json")
    args = ap.parse_args(argv)
    with open(args.pseudo) as f:
        pseudo = json.load(f)
    with open(args.gt) as f:
        gt = json.load(f)
    counts = breakdown(pseudo, gt)["counts"]
    total = sum(counts.values())
    print(f"{args.pseudo}: {total} pseudo boxes against {args.gt}")
    print(f"{'pseudo box vs the real boxes of its class':<45} {'boxes':>6} {'share':>7}")
    for row in ERROR_ROWS:
        print(f"{row:<45} {counts[row]:>6} {100 * counts[row] / max(total, 1):>6.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
