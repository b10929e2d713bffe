"""``wsod report``: metrics.json -> report.md + self-contained report.html with plots."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = "write report.md and a self-contained report.html (tables, PR curves, gallery)"

EXAMPLES = """examples (the layout `make all` makes, RUN=work_dirs/voc07_cpu):
  wsod report --metrics work_dirs/voc07_cpu/eval/metrics.json --out-dir work_dirs/voc07_cpu/report
  wsod report --metrics work_dirs/voc07_cpu/eval/metrics.json --out-dir work_dirs/voc07_cpu/report \\
      --gt work_dirs/voc07_cpu/data/val_gt.json \\
      --detections weak=work_dirs/voc07_cpu/weak/val_dets.json \\
      strong=work_dirs/voc07_cpu/strong/val_dets.json \\
      --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json --gallery-images 12

Tables and plots need only metrics.json; --gt (and --pseudo-labels) add the image gallery.
Provenance and cost per stage come from the .meta.json sidecars under --run-dir.
"""


OPTIONS = (
    Option("--metrics", metavar="FILE", help="metrics.json of `wsod evaluate`"),
    Option("--out-dir", metavar="DIR", help="folder for report.md/html and PNGs"),
    Option("--gt", metavar="FILE", help="evaluated split's <split>_gt.json: enables the gallery"),
    Option(
        "--detections",
        nargs="+",
        metavar="NAME=PATH",
        help="detections drawn in the gallery (default: those in metrics.json)",
    ),
    Option(
        "--pseudo-labels", metavar="FILE", help="pseudo labels drawn against the train ground truth"
    ),
    Option(
        "--gallery-images", type=int, metavar="N", help="images per gallery (default 8; 0 disables)"
    ),
    Option(
        "--run-dir",
        metavar="DIR",
        help="run whose .meta.json sidecars give provenance and cost per stage "
        "(default: the folder above the metrics file's, RUN for RUN/eval/metrics.json)",
    ),
    Option("--title", help="report title"),
    Option(
        "--quick-look",
        metavar="PIPELINE",
        help="the run is the quick look of PIPELINE (make all QUICK=1): the report and its last "
        "line say so and name the full run to make next",
    ),
    Option("--seed", type=int, low=0, help="seed of the gallery's image choice (default 0)"),
    Option(
        "--score-thr",
        type=float,
        metavar="S",
        help="minimum score of a drawn detection (default 0.3)",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.report import run

    for opt, flag in (("metrics", "--metrics"), ("out_dir", "--out-dir")):
        if getattr(args, opt, None) is None:
            raise ValueError(f"{flag} is required (or give it in the pipeline's 'report' dict)")
    result = run(args.metrics, args.out_dir, **run_kwargs(args, OPTIONS, ("metrics", "out_dir")))
    print(
        f"wrote {result['html']} and {result['markdown']} "
        f"({len(result['figures'])} plots, {len(result['gallery'])} gallery images)"
    )
    if args.quick_look:
        print(quick_look_line(args.quick_look))
    return 0


def quick_look_line(pipeline: str) -> str:
    """The last line of a quick look (``make all QUICK=1``): what it was, what to run next."""
    return (
        f"quick look of {pipeline} done: every stage ran on your data, but a few images and "
        "training steps make its numbers meaningless (strong AP at 0 is expected); next, the "
        f"full run: make all PIPELINE={pipeline} (the same command without QUICK=1)"
    )
