"""``wsod denoise``: argparse only; the logic is ``wsod.stages.denoise.run``."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = "De-noise black-box detections into pseudo labels (COCO instances json)."

EXAMPLES = """examples:
  wsod denoise --detections work_dirs/voc07/weak/train_dets.json \\
      --split work_dirs/voc07/data/train.json --out work_dirs/voc07/denoise/pseudo_train.json
  wsod denoise --detections work_dirs/voc07/weak/train_dets.json \\
      --split work_dirs/voc07/data/train.json --out work_dirs/voc07/denoise/pseudo_train.json \\
      --strategies "[dict(type='containment', thr=0.85), dict(type='mist', p=0.5, thr=0.2)]"
  wsod denoise --detections work_dirs/voc07/weak/train_dets.json \\
      --split work_dirs/voc07/data/train.json --out work_dirs/voc07/denoise/pseudo_train.json \\
      --quality-gt work_dirs/voc07/data/train_gt.json --ablate

strategies: label_consistency (always first), top1, topk(k), score_threshold(thr, fallback),
containment(thr, exempt), mist(p, thr), pgf(keep_thr, contain_thr, exempt; SoS-WSOD),
minmax_normalize(per_class), size_filter(min_side, min_area, max_area, max_aspect, clip,
keep_top1), nms(thr), wbf(thr, score), weight(mode, min_weight), image_filter(min_score),
inner_box(rel_score, max_area, inside; before top1), ignore_regions(rel_score, max_overlap;
last: other confident boxes become iscrowd ignore regions, for a strong config with
ignore_iof_thr). The reference boxes of --quality-gt are
used for the diagnostic report only."""


OPTIONS = (
    Option(
        "--detections",
        metavar="JSON",
        help="COCO results json (image_id, category_id, bbox xywh, score)",
    ),
    Option("--split", metavar="JSON", help="weak-label split json (from wsod data)"),
    Option("--out", metavar="JSON", help="pseudo-label COCO instances json to write"),
    Option(
        "--strategies",
        metavar="LIST|FILE",
        help="strategy chain: JSON or python-literal list of dicts with 'type', "
        "or a .json/.py file (a .py defines `strategies = [...]`); default "
        "label_consistency -> top1",
    ),
    Option(
        "--quality-gt",
        dest="quality_gt",
        metavar="JSON",
        help="reference boxes of the same split: writes <out>.quality.json "
        "(diagnosis only, never used to choose boxes)",
    ),
    Option(
        "--ablate",
        action="store_true",
        default=None,
        help="also score the built-in strategy chains and print one table "
        "(needs --quality-gt); writes <out>.ablation.json",
    ),
    Option(
        "--min-score",
        dest="min_score",
        type=float,
        metavar="S",
        help="drop detections scoring below S when reading (no fallback)",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.denoise import run

    required = ("detections", "split", "out")
    for name in required:
        if getattr(args, name, None) is None:
            raise ValueError(f"--{name} is required (or give it in the pipeline's 'denoise')")
    run(args.detections, args.split, args.out, **run_kwargs(args, OPTIONS, required))
    return 0
