"""``wsod evaluate``: VOC mAP (11-point and area), COCO AP and train-side diagnostics."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = "score detectors (and pseudo labels) against the eval-only ground truth -> metrics.json"

EXAMPLES = """examples (the layout `make all` makes, RUN=work_dirs/voc07_cpu):
  wsod evaluate --gt work_dirs/voc07_cpu/data/val_gt.json \\
      --detections weak=work_dirs/voc07_cpu/weak/val_dets.json \\
      strong=work_dirs/voc07_cpu/strong/val_dets.json --out work_dirs/voc07_cpu/eval/metrics.json
  wsod evaluate --gt work_dirs/voc07_cpu/data/val_gt.json \\
      --detections weak=work_dirs/voc07_cpu/weak/val_dets.json \\
      --train-gt work_dirs/voc07_cpu/data/train_gt.json \\
      --train-detections weak=work_dirs/voc07_cpu/weak/train_dets.json \\
      --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json \\
      --label-splits train=work_dirs/voc07_cpu/data/train.json val=work_dirs/voc07_cpu/data/val.json \\
      --out work_dirs/voc07_cpu/eval/metrics.json

Only this stage (and `wsod report`) reads ground-truth boxes; training stages never do.
Tags-only data (a gt file with info.has_boxes false) gets no AP, CorLoc or pseudo-label entries
(one line says each is skipped and why); with boxes for some images only (wsod data --boxes),
every box figure is over those images.
"""


OPTIONS = (
    Option("--gt", metavar="FILE", help="eval split ground truth (<split>_gt.json)"),
    Option(
        "--detections",
        nargs="+",
        metavar="NAME=PATH",
        help="COCO results json per detector on the eval split (name=path; a "
        "bare path is named by its file stem)",
    ),
    Option("--out", metavar="FILE", help="output metrics.json"),
    Option(
        "--names", nargs="+", metavar="NAME", help="names for bare --detections paths, in order"
    ),
    Option(
        "--train-gt",
        metavar="FILE",
        help="train split ground truth, for CorLoc / pseudo-label diagnostics",
    ),
    Option(
        "--train-detections",
        nargs="+",
        metavar="NAME=PATH",
        help="detections on the train split, scored by CorLoc",
    ),
    Option(
        "--pseudo-labels",
        metavar="FILE",
        help="pseudo labels (COCO instances + score) on train images",
    ),
    Option(
        "--split-name",
        metavar="NAME",
        help="name of the evaluated split (default: from the gt file)",
    ),
    Option("--iou-thr", type=float, low=0, high=1, metavar="T", help="IoU threshold (default 0.5)"),
    Option(
        "--pr-points", type=int, metavar="N", help="recall levels kept per PR curve (default 101)"
    ),
    Option(
        "--label-splits",
        nargs="+",
        metavar="NAME=PATH",
        help="weak-label splits (train=.../train.json val=.../val.json): images per class, and "
        "on the evaluated split's tags how often each detector fires and how weak and strong "
        "agree; what tags-only data is judged by",
    ),
    Option(
        "--score-thr",
        type=float,
        metavar="T",
        help="score from which a detection counts as firing, for --label-splits (default 0.3)",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.evaluate import run

    required = ("gt", "detections", "out")
    for opt in required:
        if getattr(args, opt, None) is None:
            raise ValueError(f"--{opt} is required (or give it in the pipeline's 'evaluate' dict)")
    result = run(args.gt, args.detections, args.out, **run_kwargs(args, OPTIONS, required))
    for name, d in result["detectors"].items():
        coco = d.get("coco", {}).get("AP")
        print(f"{name}: mAP@0.5 11-point {d['mAP_11points']} area {d['mAP_area']} COCO AP {coco}")
    for line in result.get("skipped", []):
        print(line)
    print(f"wrote {args.out} (split {result['split']})")
    return 0
