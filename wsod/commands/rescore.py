"""``wsod rescore``: argparse only; the logic is ``wsod.stages.rescore.run``."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = "multiply a detector's scores by the black box's confidence in the class for the image"

EXAMPLES = """examples:
  wsod rescore --detections work_dirs/voc07/strong/val_dets.json \\
      --black-box work_dirs/voc07/weak/val_dets.json --split work_dirs/voc07/data/val.json \\
      --out work_dirs/voc07/rescore/strong_val_dets.json

score' = score x (the black box's highest score for that class in that image); detections of a
class the black box did not detect in their image are dropped. Both detectors then run on new
images. In a pipeline: rescore_by_black_box = 1 (make rescore).
"""


OPTIONS = (
    Option("--detections", metavar="JSON", help="COCO results json to rescore"),
    Option(
        "--black-box",
        dest="black_box",
        metavar="JSON",
        help="the black box's COCO results json on the same images",
    ),
    Option("--out", metavar="JSON", help="rescored COCO results json to write"),
    Option("--split", metavar="JSON", help="the images' split json (checks image and class ids)"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.rescore import run

    required = ("detections", "black_box", "out")
    for opt in required:
        if getattr(args, opt, None) is None:
            flag = "--" + opt.replace("_", "-")
            raise ValueError(f"{flag} is required (see `wsod rescore --help`)")
    run(args.detections, args.black_box, args.out, **run_kwargs(args, OPTIONS, required))
    return 0
