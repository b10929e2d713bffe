"""How much of what the pseudo labels miss do the ``ignore_regions`` cover (a diagnostic).

Runs a de-noise chain ending in ``ignore_regions`` on a detector's detections, then, against
reference boxes of the same split (read here only, never by the chain): the objects of the
labelled classes in images that keep a pseudo box which no pseudo box of their class finds
(IoU >= 0.5), the share of them lying >= 50 % inside an ignore region (the assigners'
``ignore_iof_thr``), and the mean share of the image area the regions take. Used to choose the
settings on the black box's val detections (docs/experiments/2026-12-03-ignore-regions.md).

Usage::

    .venv/bin/python benchmarks/ignore_coverage.py \\
        --detections work_dirs/voc07_cpu/weak/val_dets.json \\
        --split work_dirs/voc07_cpu/data/val.json --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --settings 0.3,0.3 0.5,0.3 0.5,0.5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import detections_to_arrays, load_detections, load_split  # noqa: E402
from wsod.denoise import build_chain, denoise_arrays  # noqa: E402
from wsod.evaluation.localization import read_reference_boxes  # noqa: E402
from wsod.utils.boxes import box_area, box_intersection, box_iou  # noqa: E402


def coverage(results: dict, images: list, ref: dict) -> dict:
    """Missed objects, the share of them inside a region, mean region share of the image."""
    missed = covered = 0
    area_share = []
    for im in images:
        d = results[int(im["id"])]
        ign = d["ignore"] == 1
        if (~ign).sum() == 0:
            continue  # no pseudo box: the strong stage skips the image
        regions = d["bboxes"][ign]
        mask = np.zeros((int(im["height"]), int(im["width"])), bool)
        for x1, y1, x2, y2 in np.round(regions).astype(int):
            mask[max(y1, 0) : max(y2, 0), max(x1, 0) : max(x2, 0)] = True
        area_share.append(mask.mean())
        sel = ref["image_ids"] == im["id"]
        for box, label in zip(ref["bboxes"][sel], ref["labels"][sel], strict=True):
            same = (d["labels"] == label) & ~ign
            if same.any() and box_iou(box[None], d["bboxes"][same]).max() >= 0.5:
                continue
            missed += 1
            if len(regions):
                inside = box_intersection(box[None], regions)[0] / max(box_area(box[None])[0], 1e-9)
                covered += bool(inside.max() >= 0.5)
    return {
        "missed": missed,
        "covered": covered / max(missed, 1),
        "area": float(np.mean(area_share)) if area_share else 0.0,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--detections", required=True, help="COCO results json of the split")
    ap.add_argument("--split", required=True, help="weak-label split json (labels, sizes)")
    ap.add_argument("--gt", required=True, help="reference boxes of the same split")
    ap.add_argument("--min-score", type=float, default=0.2, help="image_filter min_score")
    ap.add_argument(
        "--settings", nargs="+", default=["0.5,0.3"], help="rel_score,max_overlap pairs"
    )
    args = ap.parse_args(argv)
    split = load_split(args.split)
    images = split["images"]
    arrays = detections_to_arrays(load_detections(args.detections, split))
    flat = (arrays["image_ids"], arrays["bboxes"], arrays["scores"], arrays["labels"], images)
    ref = read_reference_boxes(args.gt)
    print(f"top1 -> image_filter({args.min_score}) -> ignore_regions on {args.detections}")
    print("rel_score  max_overlap  missed objects  covered by a region  mean region area")
    for s in args.settings:
        rel, over = (float(v) for v in s.split(","))
        chain = build_chain(
            [
                dict(type="top1"),
                dict(type="image_filter", min_score=args.min_score),
                dict(type="ignore_regions", rel_score=rel, max_overlap=over),
            ]
        )
        c = coverage(denoise_arrays(*flat, chain), images, ref)
        print(
            f"{rel:9.2f}  {over:11.2f}  {c['missed']:14d}  {100 * c['covered']:18.1f} %"
            f"  {100 * c['area']:14.1f} %"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
