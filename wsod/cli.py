"""Command line: ``wsod <stage> ...`` (= ``python -m wsod <stage> ...``).

Each subcommand lives in ``wsod.commands.<stage>`` (argparse only) and calls
``wsod.stages.<stage>.run(...)`` (all logic). ``--pipeline FILE`` fills any option not given on
the command line from the ``<stage>`` section of a pipeline file (see ``pipelines/demo.py``).
Errors become one line on stderr and exit code 1 (``--debug`` shows the traceback). Ctrl-C
becomes one line and exit code 130, also when it lands in a finalizer (a DataLoader iterator's
``__del__`` that joins its workers after a training loop): Python would print it as an ignored
exception with its traceback and go on; :func:`interrupts_from_finalizers` stops the command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from wsod.commands import STAGES


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks. Defaults are stated in each option's help text: options
    default to None so that ``--pipeline`` can fill them, and None is not worth printing."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wsod",
        formatter_class=_Formatter,
        description="Weakly supervised object detection: image-level labels in, an mmdetection "
        "detector out.\nStages: " + " -> ".join(STAGES),
        epilog="Run `wsod <stage> --help` for a stage's options and examples; "
        "`make help` for the pipeline targets.",
    )
    from wsod import __version__

    parser.add_argument("--version", action="version", version=f"wsod {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<stage>", required=True)
    for name in STAGES:
        mod = importlib.import_module(f"wsod.commands.{name}")
        p = sub.add_parser(
            name,
            help=mod.HELP,
            description=mod.HELP,
            epilog=mod.EXAMPLES,
            formatter_class=_Formatter,
        )
        p.add_argument(
            "--pipeline",
            metavar="FILE",
            help=f"pipeline file whose '{name}' section supplies options not given here",
        )
        p.add_argument("--debug", action="store_true", help="show the full traceback on error")
        mod.add_arguments(p)
    return parser


def apply_pipeline(args: argparse.Namespace) -> None:
    """Fill options left at ``None`` from the pipeline file's section for this stage.

    ``cfg_options`` given in both places are merged, the command line's keys winning (so a
    Makefile rule can add a key to a pipeline's overrides without dropping them). The whole
    pipeline is kept as ``args.pipeline_values`` (``wsod predict`` reads its rescoring from the
    weak and proposals sections).
    """
    if not getattr(args, "pipeline", None):
        return
    from wsod.commands import parse_cfg_options
    from wsod.pipeline import load_pipeline

    pipeline = load_pipeline(args.pipeline)
    args.pipeline_values = pipeline  # the whole file, for commands that read other sections
    section = pipeline.get(args.command, {}) or {}
    for key, value in section.items():
        given = getattr(args, key, None)
        if given is None:
            setattr(args, key, value)
        elif key == "cfg_options" and value:
            setattr(args, key, {**parse_cfg_options(value), **parse_cfg_options(given)})


_PYTHON_FORMAT = warnings.formatwarning


def one_line_warnings(command: str) -> None:
    """Print wsod's own warnings (data checks, ...) as one line, ``wsod <command>: warning:
    <message>``, without Python's file name, line number and source line; other packages'
    warnings keep Python's format."""
    package = str(Path(__file__).resolve().parent) + os.sep

    def fmt(message, category, filename, lineno, line=None) -> str:
        if str(Path(filename).resolve()).startswith(package):
            return f"wsod {command}: warning: {message}\n"
        return _PYTHON_FORMAT(message, category, filename, lineno, line)

    warnings.formatwarning = fmt


class FinalizerInterrupts:
    """A ``sys.unraisablehook`` that turns a ``KeyboardInterrupt`` raised inside a finalizer
    (``__del__``, where Python only prints it) into an interrupt of the main thread, raised
    where the command runs, and prints nothing; other unraisable exceptions keep the previous
    hook's report until the command is interrupted (``interrupted``): then the interpreter's
    exit collects DataLoader iterators whose workers the interrupt already stopped, and their
    errors are leftovers, not news."""

    def __init__(self, previous) -> None:
        self.previous = previous
        self.interrupted = False

    def __call__(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            if not self.interrupted:
                import _thread
                import threading

                self.interrupted = True
                # from another thread, once this hook has returned: raised inside the hook, the
                # interrupt would be reported as the hook's own error and lost again
                threading.Timer(0.05, _thread.interrupt_main).start()
            return
        if not self.interrupted:
            self.previous(unraisable)


def interrupts_from_finalizers() -> FinalizerInterrupts:
    """Install :class:`FinalizerInterrupts` (once per process) and return it, reset."""
    if not isinstance(sys.unraisablehook, FinalizerInterrupts):
        sys.unraisablehook = FinalizerInterrupts(sys.unraisablehook)
    sys.unraisablehook.interrupted = False
    return sys.unraisablehook


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    one_line_warnings(args.command)
    finalizers = interrupts_from_finalizers()
    try:
        apply_pipeline(args)
        mod = importlib.import_module(f"wsod.commands.{args.command}")
        return int(mod.execute(args) or 0)
    except KeyboardInterrupt:
        finalizers.interrupted = True
        print(
            f"wsod {args.command}: interrupted; rerun the same command to resume", file=sys.stderr
        )
        return 130
    except Exception as e:  # noqa: BLE001 - the CLI's contract is one line + exit 1
        if args.debug:
            raise
        print(f"wsod {args.command}: error: {e}", file=sys.stderr)
        return 1
