"""``wsod proposals``: region proposals for a split (see :mod:`wsod.stages.proposals`)."""

from __future__ import annotations

import argparse
import json

from wsod.commands import run_kwargs

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.add_argument("--split", help="weak-label split json (from `wsod data`)")
    p.add_argument("--out", help="output .pkl (mmdet proposal_file); a .npz twin is written too")
    p.add_argument(
        "--method",
        choices=("selective_search", "edge_boxes", "import", "whole_image"),
        help="proposal method [selective_search]; whole_image: one box = the image (for image-"
        "level scores of a CAM black box)",
    )
    p.add_argument("--mode", choices=("fast", "quality"), help="selective search mode [fast]")
    p.add_argument("--max-boxes", type=int, help="boxes kept per image, best first [2000]")
    p.add_argument("--min-size", type=float, help="drop boxes with a side below this [8 px]")
    p.add_argument("--workers", type=int, help="processes over images [1]")
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="process images[i::n] only (0-based i); merge the shards with --merge",
    )
    p.add_argument(
        "--cache-dir",
        help="per-image cache for resuming, keyed by settings, image name and content: one "
        "folder can serve every run on the same images (make uses $WSOD_CACHE/proposals) "
        "[<out>.cache]",
    )
    p.add_argument("--import-file", help="proposals to import (.mat, .pkl, .npz)")
    p.add_argument(
        "--import-layout",
        choices=("yx1", "xy"),
        help="box layout of the import: yx1 = 1-based y1,x1,y2,x2 (default for .mat), "
        "xy = x1,y1,x2,y2 (default for .pkl/.npz)",
    )
    p.add_argument(
        "--allow-pickle",
        action="store_const",
        const=True,
        help="allow reading .pkl files (unpickling runs code: trusted files only)",
    )
    p.add_argument(
        "--edge-model",
        help="structured-edge model (model.yml.gz) for edge_boxes; "
        "without it a weaker Sobel edge map is used",
    )
    p.add_argument(
        "--resize",
        type=int,
        help="working size: run on images shrunk to this longer side, boxes mapped back to full "
        "pixels; 0 = full resolution (minutes per 12 MP photo) [500]",
    )
    p.add_argument("--seed", type=int, help="seed of selective search's ranking [0]")
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="SHARD_FILE",
        help="combine these shard outputs into --out instead of computing",
    )
    p.add_argument("--data-root", help="override the split's info.data_root")


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.proposals import run

    if not args.split or not args.out:
        raise ValueError("--split and --out are required (or give them in --pipeline)")
    summary = run(args.split, args.out, **run_kwargs(args, add_arguments, ("split", "out")))
    print(json.dumps(summary, default=str))
    return 0
