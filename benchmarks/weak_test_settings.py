"""Benchmark of the weak detector's test-time settings on real VOC 2007 images (not a test).

Runs a trained weak detector (a checkpoint, e.g. the pipeline's ``weak/`` work dir) on the
first ``--num`` images of a split once per variant, and prints VOC07 mAP@0.5 (11-point and
area) against that split's ground truth, the CorLoc of the top box per labelled class (what the
default de-noising keeps as pseudo labels), the median area of those top boxes (share of the
image) and the seconds per image. Variants:

* ``--views``: test-time augmentation; ``1`` (the config as is), ``flip``,
  ``flip,0.75,1.0,1.25`` (flip + scale factors), ``0.75,1.0,1.25``...
* ``--options``: any test-time config change, as a json dict of dotted keys, e.g.
  ``'{"model.roi_head.scoring.area_weight": 1.5}'`` (``+key``: a key the config does not list).

It reads the evaluated images' **ground-truth boxes** (``<split>_gt.json``): an evaluation
tool for choosing test-time settings on val, never part of the training side.

Usage::

    .venv/bin/python benchmarks/weak_test_settings.py \\
        --config configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py \\
        --checkpoint work_dirs/voc07_cpu/weak/iter_2000.pth \\
        --split work_dirs/voc07_cpu/data/val.json --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --proposals work_dirs/voc07_cpu/proposals/val.pkl --num 300 \\
        --views 1 flip flip,0.75,1.0,1.25 \\
        --options '{"model.roi_head.scoring.area_weight": 1.5}'
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wsod.contracts import load_detections  # noqa: E402
from wsod.evaluation.scoring import localization_entry, score_detections  # noqa: E402
from wsod.stages import weak  # noqa: E402


def parse_views(text: str) -> dict | None:
    """``1`` -> None (the config's own test settings); ``flip,0.75,1.0`` -> a detector test_cfg."""
    if text == "1":
        return None
    parts = text.split(",")
    flip = "flip" in parts
    scales = [float(p) for p in parts if p != "flip"] or [1.0]
    return dict(flip=flip, scales=scales)


def top_box_area(dets: list, split: dict) -> float:
    """Median area (share of the image) of the top box per (image, detected class)."""
    import numpy as np

    size = {im["id"]: im["width"] * im["height"] for im in split["images"]}
    top: dict = {}
    for d in dets:
        key = (d["image_id"], d["category_id"])
        if key not in top or d["score"] > top[key]["score"]:
            top[key] = d
    areas = [d["bbox"][2] * d["bbox"][3] / size[d["image_id"]] for d in top.values()]
    return float(np.median(areas)) if areas else float("nan")


def subset(split_path: Path, gt_path: Path, num: int, out_dir: Path) -> tuple[Path, dict, dict]:
    """The first ``num`` images of a split and its gt; the split is written to ``out_dir``."""
    split = json.loads(split_path.read_text())
    gt = json.loads(gt_path.read_text())
    split["images"] = split["images"][:num]
    ids = {im["id"] for im in split["images"]}
    gt["images"] = [im for im in gt["images"] if im["id"] in ids]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in ids]
    split["info"] = dict(split["info"], num_images=len(ids))
    path = out_dir / f"{split_path.stem}_first{num}.json"
    path.write_text(json.dumps(split))
    return path, split, gt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--split", required=True, type=Path, help="weak-label split json")
    ap.add_argument("--gt", required=True, type=Path, help="its <split>_gt.json (evaluation)")
    ap.add_argument("--proposals", required=True, type=Path)
    ap.add_argument("--num", type=int, default=300, help="first N images of the split")
    ap.add_argument("--views", nargs="*", default=[], help="TTA view sets (see above)")
    ap.add_argument("--options", nargs="*", default=[], help="json dicts of dotted keys")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        split_path, split, gt = subset(args.split, args.gt, args.num, tmp)
        print(
            f"{len(split['images'])} images of {args.split}, {len(gt['annotations'])} boxes; "
            f"checkpoint {args.checkpoint}"
        )
        print(
            f"{'variant':<40} {'mAP 11-pt':>9} {'mAP area':>9} {'top-1 CorLoc':>12} "
            f"{'top-1 area':>10} {'s/image':>8}"
        )
        variants = []
        for text in args.views or ([] if args.options else ["1"]):
            test_cfg = parse_views(text)
            variants.append((text, {} if test_cfg is None else {"+model.test_cfg": test_cfg}))
        variants += [(text, json.loads(text)) for text in args.options]
        for i, (text, changes) in enumerate(variants):
            options = {"load_from": args.checkpoint, **changes}
            out = tmp / f"dets_{i}.json"
            t0 = time.perf_counter()
            weak.run(
                args.config,
                tmp / "work",
                infer=[(split_path, args.proposals, out)],
                cfg_options=options,
            )
            wall = time.perf_counter() - t0
            dets = load_detections(out, split)
            scores = score_detections(gt, dets, with_coco=False)
            loc = localization_entry(dets, gt)
            print(
                f"{text:<40} {100 * scores['mAP_11points']:>9.1f} "
                f"{100 * scores['mAP_area']:>9.1f} {100 * loc['corloc']:>12.1f} "
                f"{100 * top_box_area(dets, split):>9.1f}% {wall / len(split['images']):>8.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
