"""``wsod proposals``: region proposals for a split (see :mod:`wsod.stages.proposals`)."""

from __future__ import annotations

import argparse
import json

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = "Compute, import or merge region proposals for a split (mmdet proposal_file + .npz)."

EXAMPLES = """examples:
  # selective search (fast) on VOC train with 2 processes; rerun the same line to resume
  wsod proposals --split work_dirs/voc07/data/train.json --out work_dirs/voc07/proposals/train.pkl --workers 2

  # a cluster array job: shard 3 of 8, then merge the 8 shard files
  wsod proposals --split work_dirs/voc07/data/train.json --out work_dirs/voc07/proposals/train.3of8.pkl --shard 3/8
  wsod proposals --split work_dirs/voc07/data/train.json --out work_dirs/voc07/proposals/train.pkl --merge work_dirs/voc07/proposals/train.*of8.pkl

  # import Fast R-CNN/OICR selective-search boxes (1-based y1,x1,y2,x2 .mat)
  wsod proposals --split work_dirs/voc07/data/train.json --out work_dirs/voc07/proposals/train.pkl --method import --import-file voc_2007_trainval.mat
"""


OPTIONS = (
    Option("--split", help="weak-label split json (from `wsod data`)"),
    Option("--out", help="output .pkl (mmdet proposal_file); a .npz twin is written too"),
    Option(
        "--method",
        choices=("selective_search", "edge_boxes", "import", "whole_image"),
        help="proposal method [selective_search]; whole_image: one box = the image (for image-"
        "level scores of a CAM black box)",
    ),
    Option("--mode", choices=("fast", "quality"), help="selective search mode [fast]"),
    Option("--max-boxes", type=int, low=1, help="boxes kept per image, best first [2000]"),
    Option("--min-size", type=float, low=0, help="drop boxes with a side below this [8 px]"),
    Option("--workers", type=int, low=1, help="processes over images [1]"),
    Option(
        "--shard",
        metavar="I/N",
        help="process images[i::n] only (0-based i); merge the shards with --merge",
    ),
    Option(
        "--cache-dir",
        help="per-image cache for resuming, keyed by settings, image name and content: one "
        "folder can serve every run on the same images (make uses $WSOD_CACHE/proposals) "
        "[<out>.cache]",
    ),
    Option("--import-file", help="proposals to import (.mat, .pkl, .npz)"),
    Option(
        "--import-layout",
        choices=("yx1", "xy"),
        help="box layout of the import: yx1 = 1-based y1,x1,y2,x2 (default for .mat), "
        "xy = x1,y1,x2,y2 (default for .pkl/.npz)",
    ),
    Option(
        "--allow-pickle",
        action="store_const",
        const=True,
        help="allow reading .pkl files (unpickling runs code: trusted files only)",
    ),
    Option(
        "--edge-model",
        help="structured-edge model (model.yml.gz) for edge_boxes; "
        "without it a weaker Sobel edge map is used",
    ),
    Option(
        "--resize",
        type=int,
        low=0,
        help="working size: run on images shrunk to this longer side, boxes mapped back to full "
        "pixels; 0 = full resolution (minutes per 12 MP photo) [500]",
    ),
    Option("--seed", type=int, low=0, help="seed of selective search's ranking [0]"),
    Option(
        "--merge",
        nargs="+",
        metavar="SHARD_FILE",
        help="combine these shard outputs into --out instead of computing",
    ),
    Option("--data-root", help="override the split's info.data_root"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.proposals import run

    if not args.split or not args.out:
        raise ValueError("--split and --out are required (or give them in --pipeline)")
    summary = run(args.split, args.out, **run_kwargs(args, OPTIONS, ("split", "out")))
    print(json.dumps(summary, default=str))
    return 0
