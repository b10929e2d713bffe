"""``wsod data``: read a dataset (VOC, CSV, COCO or the generated demo) into split files."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = (
    "turn a dataset on disk into <split>.json (image labels, no boxes) and <split>_gt.json "
    "(eval-only boxes)"
)

EXAMPLES = """\
examples:
  wsod data --source ../shared/data/VOCdevkit/VOC2007 --out-dir work_dirs/voc07/data --splits train val
  wsod data --format demo --source data/demo --out-dir work_dirs/demo/data
  wsod data --format csv --source data/my_images --splits train val --boxes data/my_boxes.json --out-dir work_dirs/mine/data

formats:
  voc   --source is a VOC2007 folder; --splits name ImageSets/Main/<split>.txt lists
        (train, val, trainval, test); labels from the per-class lists when present.
  csv   --source is the image folder; each --splits entry is a CSV file (or <source>/<name>.csv)
        with rows 'file,label1;label2' (header optional); the label column is required ('file,'
        = an image with no object). Classes = the sorted names unless --classes; then names
        that differ only in case (Car / car) are an error and a class named on one image only
        is a warning (a typo?); with --classes every unknown name is an error.
        --boxes: eval-only boxes as a COCO json or a folder of VOC XML files.
  coco  --source is a COCO json (one split) or a folder holding <split>.json files whose images
        carry 'labels' (else labels = categories of their annotations); boxes go to _gt only.
  demo  --source is a folder; the synthetic demo dataset (400 train / 100 val images) is
        generated there once per --seed and size, then read as VOC.
Every image is decoded once: a missing, truncated or corrupt image (one the decoder warns
about), bad XML or class names stop the stage with the file named; --skip-bad skips them and
lists them in <out-dir>/<split>.skipped.json. The images per class are printed per split.
"""


OPTIONS = (
    Option(
        "--source",
        metavar="PATH",
        help="dataset folder (voc: the VOC2007 folder; csv: image folder; coco: "
        "json or folder; demo: folder to generate into)",
    ),
    Option("--out-dir", metavar="DIR", help="where <split>.json and <split>_gt.json go"),
    Option(
        "--format", choices=("voc", "csv", "coco", "demo"), help="dataset format; voc if not given"
    ),
    Option(
        "--splits",
        nargs="+",
        metavar="SPLIT",
        help="splits to read (voc/demo: list names; csv/coco: CSV/json files or "
        "their names in --source); train val if not given",
    ),
    Option(
        "--limit",
        type=int,
        low=1,
        metavar="N",
        help="keep only the first N images of each split (tests, quick runs)",
    ),
    Option(
        "--skip-bad",
        action="store_true",
        default=None,
        help="skip and count bad items instead of stopping",
    ),
    Option("--seed", type=int, low=0, help="demo generator seed; 0 if not given"),
    Option(
        "--num-images",
        type=int,
        low=1,
        metavar="N",
        help="demo size: N train images and N/4 val; 400 / 100 if not given",
    ),
    Option(
        "--boxes",
        metavar="PATH",
        help="csv: eval-only boxes (COCO json or folder of VOC XML files)",
    ),
    Option(
        "--classes",
        nargs="+",
        metavar="NAME",
        help="class names in category-id order; from the dataset if not given",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.data import run

    if not args.source or not args.out_dir:
        raise ValueError("--source and --out-dir are required (or give them in --pipeline)")
    summary = run(
        args.source,
        args.out_dir,
        **run_kwargs(args, OPTIONS, passed=("source", "out_dir")),
    )
    for name, s in summary.items():
        print(
            f"data {name}: {s['images']} images, {s['objects']} boxes (eval-only), "
            f"{s['skipped']} skipped -> {s['split_file']}"
        )
        if s.get("images_per_class"):
            counts = ", ".join(f"{c} {n}" for c, n in s["images_per_class"].items())
            print(f"data {name}: images per class: {counts}")
    return 0
