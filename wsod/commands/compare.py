"""``wsod compare``: a run's mAP beside the published headline or another run, with the
documented run-to-run spread (see :mod:`wsod.stages.compare`)."""

from __future__ import annotations

import argparse

from wsod.commands import run_kwargs
from wsod.utils.options import Option, add_options

HELP = (
    "reproducibility check: a run's val mAP beside docs/results.md's headline (or another "
    "run's metrics.json), saying which differences are beyond the run-to-run spread"
)

EXAMPLES = """examples:
  # re-made the VOC headline: is it the published one, within the seed spread?
  wsod compare --metrics work_dirs/voc07_cpu/eval/metrics.json
  make check PIPELINE=pipelines/voc07_cpu.py          # the same, via make

  # two runs of your own, e.g. before and after a change
  wsod compare --metrics work_dirs/mine/eval/metrics.json \\
      --against work_dirs/mine_before/eval/metrics.json --out compare.json

The spread is the measured run-to-run standard deviation per detector (strong 2.6, rescored 1.5,
fsd 1.8 mAP points; the black box 0.3): docs/experiments/2026-12-03-strong-seed-spread.md. A
difference beyond --beyond x that spread (default 2) is called out; the others are another draw
of the same pipeline. Runs on different machines or thread counts are other draws too.
"""


OPTIONS = (
    Option("--metrics", metavar="FILE", help="the run's eval/metrics.json"),
    Option(
        "--against",
        metavar="FILE",
        help="docs/results.md (its headline table) or another run's metrics.json [docs/results.md]",
    ),
    Option("--out", metavar="JSON", help="also write the rows as json"),
    Option(
        "--beyond",
        type=float,
        low=0,
        metavar="K",
        help="call a difference beyond the spread above K x the run-to-run sd [2]",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.compare import run

    if not args.metrics:
        raise ValueError("--metrics is required (a run's eval/metrics.json)")
    summary = run(args.metrics, **run_kwargs(args, OPTIONS, passed=("metrics",)))
    print("\n".join(summary["lines"]))
    return 0
