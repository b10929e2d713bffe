"""Run-to-run spread of a detector: val mAP of several training runs of one config, mean and
standard deviation overall and per class (a diagnostic, not a test).

Each run is one ``val_dets.json`` (e.g. ``wsod strong --seed N`` on the same pseudo labels).
``--image-scores`` also scores every run x the CAM black box's class probability (what
``rescore_by_black_box = 'image'`` does). It reads the split's ground-truth boxes
(``<split>_gt.json``): an evaluation tool.

Usage::

    .venv/bin/python benchmarks/seed_spread.py --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --runs seed0=work_dirs/voc07_cpu/strong/val_dets.json \\
        seed1=work_dirs/strong_seed1/val_dets.json seed2=work_dirs/strong_seed2/val_dets.json \\
        --image-scores work_dirs/voc07_cpu/weak/val_image_scores.json --per-class
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import detections_by_image, load_detections  # noqa: E402
from wsod.evaluation.gt import class_ids, class_names, gt_by_image, load_gt  # noqa: E402
from wsod.evaluation.voc import eval_voc  # noqa: E402
from wsod.stages.evaluate import named_paths  # noqa: E402
from wsod.stages.rescore import image_confidence, rescore_detections  # noqa: E402


def spread(values: list[float]) -> str:
    """``mean +- sd (min-max)`` in percent; sd is the sample standard deviation (n - 1)."""
    v = 100 * np.asarray(values, np.float64)
    sd = v.std(ddof=1) if len(v) > 1 else float("nan")
    return f"{v.mean():5.1f} +- {sd:4.1f} ({v.min():.1f}-{v.max():.1f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gt", required=True, help="the evaluation split's <split>_gt.json")
    ap.add_argument("--runs", nargs="+", required=True, help="NAME=COCO results json (one per run)")
    ap.add_argument(
        "--image-scores",
        help="the CAM black box's image-level class scores on the split (whole-image boxes)",
    )
    ap.add_argument("--per-class", action="store_true", help="also print AP per class")
    args = ap.parse_args(argv)

    gt = load_gt(args.gt)
    gts, ids, names = gt_by_image(gt), class_ids(gt), class_names(gt)
    modes = {"as is": None}
    if args.image_scores:
        modes["x image classifier"] = image_confidence(load_detections(args.image_scores))
    runs = named_paths(args.runs)

    results: dict[str, dict[str, dict]] = {how: {} for how in modes}
    for name, path in runs.items():
        dets = load_detections(path)
        for how, factor in modes.items():
            scored = dets if factor is None else rescore_detections(dets, factor)
            results[how][name] = eval_voc(detections_by_image(scored), gts, ids)

    width = max(len(n) for n in runs)
    for how, by_run in results.items():
        print(f"scores {how}: mAP 11-point | area")
        for name, res in by_run.items():
            m = res["mAP"]
            print(f"  {name:<{width}} {100 * m['11points']:5.1f} | {100 * m['area']:5.1f}")
        for mode in ("11points", "area"):
            print(f"  {mode:<11} {spread([r['mAP'][mode] for r in by_run.values()])}")
        if args.per_class:
            print(f"  per class (11-point): {' '.join(by_run)} | mean +- sd (min-max)")
            for c in ids:
                aps = [r["per_class"][c]["ap"]["11points"] for r in by_run.values()]
                cols = " ".join(f"{100 * a:5.1f}" for a in aps)
                print(f"  {names[c]:<12} {cols} | {spread(aps)}")
    print(f"runs: {len(runs)}; gt: {args.gt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
