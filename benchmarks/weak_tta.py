"""Benchmark of the weak detector's test-time augmentation on real VOC 2007 images (not a test).

Runs a trained weak detector (a checkpoint, e.g. the pipeline's ``weak/`` work dir) on the
first ``--num`` images of a split once per view set, and prints VOC07 mAP@0.5 (11-point and
area) against that split's ground truth and the seconds per image. View sets: ``1`` (the
config as is), ``flip``, ``flip,0.75,1.0,1.25`` (flip + scale factors), ``0.75,1.0,1.25``...

It reads the evaluated images' **ground-truth boxes** (``<split>_gt.json``): an evaluation
tool for choosing test-time settings on val, never part of the training side.

Usage::

    .venv/bin/python benchmarks/weak_tta.py \\
        --config configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py \\
        --checkpoint work_dirs/voc07_cpu/weak/iter_2000.pth \\
        --split work_dirs/voc07_cpu/data/val.json --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --proposals work_dirs/voc07_cpu/proposals/val.pkl --num 300 \\
        --views 1 flip flip,0.75,1.0,1.25
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
from wsod.stages import weak  # noqa: E402
from wsod.stages.evaluate import score_detections  # noqa: E402


def parse_views(text: str) -> dict | None:
    """``1`` -> None (the config's own test settings); ``flip,0.75,1.0`` -> a detector test_cfg."""
    if text == "1":
        return None
    parts = text.split(",")
    flip = "flip" in parts
    scales = [float(p) for p in parts if p != "flip"] or [1.0]
    return dict(flip=flip, scales=scales)


def subset(split_path: Path, gt_path: Path, num: int, out_dir: Path) -> tuple[Path, dict]:
    split = json.loads(split_path.read_text())
    gt = json.loads(gt_path.read_text())
    split["images"] = split["images"][:num]
    ids = {im["id"] for im in split["images"]}
    gt["images"] = [im for im in gt["images"] if im["id"] in ids]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in ids]
    split["info"] = dict(split["info"], num_images=len(ids))
    path = out_dir / f"{split_path.stem}_first{num}.json"
    path.write_text(json.dumps(split))
    return path, gt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--split", required=True, type=Path, help="weak-label split json")
    ap.add_argument("--gt", required=True, type=Path, help="its <split>_gt.json (evaluation)")
    ap.add_argument("--proposals", required=True, type=Path)
    ap.add_argument("--num", type=int, default=300, help="first N images of the split")
    ap.add_argument("--views", nargs="+", default=["1", "flip", "flip,0.75,1.0,1.25"])
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        split_path, gt = subset(args.split, args.gt, args.num, tmp)
        split = json.loads(split_path.read_text())
        print(
            f"{len(split['images'])} images of {args.split}, {len(gt['annotations'])} boxes; "
            f"checkpoint {args.checkpoint}"
        )
        print(f"{'views':<24} {'mAP 11-pt':>9} {'mAP area':>9} {'s/image':>8}")
        for text in args.views:
            options = {"load_from": args.checkpoint}
            test_cfg = parse_views(text)
            if test_cfg is not None:
                options["model.test_cfg"] = test_cfg
            out = tmp / f"dets_{len(options)}_{abs(hash(text))}.json"
            t0 = time.perf_counter()
            weak.run(
                args.config,
                tmp / "work",
                infer=[(split_path, args.proposals, out)],
                cfg_options=options,
            )
            wall = time.perf_counter() - t0
            scores = score_detections(gt, load_detections(out, split), with_coco=False)
            print(
                f"{text:<24} {100 * scores['mAP_11points']:>9.1f} "
                f"{100 * scores['mAP_area']:>9.1f} {wall / len(split['images']):>8.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
