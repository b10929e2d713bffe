"""Where detectors' confident detections go wrong on an evaluation split (a diagnostic, not a test).

For each detector and each class c with n_c ground-truth boxes, its n_c highest-scoring
detections of c (the part of the ranking that decides most of the AP) are classified against
the ground truth of their image:

* ``correct``: IoU >= 0.5 with a box of class c;
* ``mislocated``: 0.1 < best IoU with a box of class c < 0.5;
* ``elsewhere``: the image holds class c, but the detection misses its boxes (IoU <= 0.1);
* ``other class``: no box of class c in the image, but IoU > 0.3 with another class's box
  (a confusion; the most frequent ``(detected -> real)`` pairs are listed);
* ``background``: none of the above.

It reads the split's **ground-truth boxes** (``<split>_gt.json``): an evaluation tool.

Usage::

    .venv/bin/python benchmarks/detection_errors.py --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --detections weak=work_dirs/voc07_cpu/weak/val_dets.json \\
        strong=work_dirs/voc07_cpu/strong/val_dets.json --confusions 10
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
from wsod.utils.boxes import box_iou  # noqa: E402

ROWS = ("correct", "mislocated", "elsewhere", "other class", "background")


def classify(dets: list, gt: dict) -> tuple[Counter, Counter]:
    """(error counts, ``(detected class, real class)`` confusion counts) of one detector."""
    names = {c["id"]: c["name"] for c in gt["categories"]}
    by_class: dict = defaultdict(list)  # (image, class) -> boxes
    by_image: dict = defaultdict(list)  # image -> [(box, class)]
    for a in gt["annotations"]:
        by_class[(a["image_id"], a["category_id"])].append(a["bbox"])
        by_image[a["image_id"]].append((a["bbox"], a["category_id"]))
    n_gt = Counter(a["category_id"] for a in gt["annotations"])
    ranked: dict = defaultdict(list)
    for d in dets:
        ranked[d["category_id"]].append(d)
    errors, confusions = Counter(), Counter()
    for c, ds in ranked.items():
        for d in sorted(ds, key=lambda d: -d["score"])[: n_gt[c]]:
            box = xywh_to_xyxy(d["bbox"])[0]
            own = by_class.get((d["image_id"], c))
            best = box_iou(box, xywh_to_xyxy(own))[0].max() if own else 0.0
            if best >= 0.5:
                errors["correct"] += 1
            elif best > 0.1:
                errors["mislocated"] += 1
            elif own:
                errors["elsewhere"] += 1
            else:
                others = by_image.get(d["image_id"], [])
                ious = box_iou(box, xywh_to_xyxy([b for b, _ in others]))[0] if others else []
                if len(ious) and ious.max() > 0.3:
                    errors["other class"] += 1
                    confusions[(names[c], names[others[int(np.argmax(ious))][1]])] += 1
                else:
                    errors["background"] += 1
    return errors, confusions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gt", required=True, help="the evaluation split's <split>_gt.json")
    ap.add_argument(
        "--detections", nargs="+", required=True, help="NAME=COCO results json (one per detector)"
    )
    ap.add_argument("--confusions", type=int, default=10, help="most frequent pairs to list")
    args = ap.parse_args(argv)
    with open(args.gt) as f:
        gt = json.load(f)
    print(f"top-n_c detections per class against {args.gt} (share of all, %)")
    print(f"{'detector':<12}" + "".join(f"{r:>13}" for r in ROWS))
    confusions = {}
    for spec in args.detections:
        name, _, path = spec.partition("=")
        with open(path) as f:
            errors, confusions[name] = classify(json.load(f), gt)
        total = max(sum(errors.values()), 1)
        print(f"{name:<12}" + "".join(f"{100 * errors[r] / total:>13.1f}" for r in ROWS))
    for name, conf in confusions.items():
        pairs = ", ".join(f"{a}->{b} {n}" for (a, b), n in conf.most_common(args.confusions))
        print(f"{name} confusions (detected -> real): {pairs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
