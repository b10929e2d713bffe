"""One module per subcommand: ``HELP``, ``EXAMPLES``, ``OPTIONS``, ``add_arguments(parser)``
and ``execute(args)``, which unpacks the arguments into ``wsod.stages.<stage>.run``.

An option is declared once, in its command's ``OPTIONS`` table of
:class:`wsod.utils.options.Option` (flag, dest, type, choices, range, metavar, help): the table
generates the parser's arguments and ``--help`` (``add_arguments``), :func:`run_kwargs` passes
every option given to ``run`` under its dest (a training stage's options as one object,
:func:`training_kwargs`), and the pipeline file's stage keys and values are checked against the
same table (:func:`stage_options`, :func:`stage_declarations`).

Options default to ``None`` so that ``--pipeline`` can fill them; the real defaults are the
keyword defaults of ``run`` (a training stage's: the fields of its options dataclass, a
:class:`wsod.training.TrainOptions`, whose defaults its ``--help`` prints).

The training commands (``weak``, ``strong``) share their mmengine options: see
:func:`config_options`, :func:`launcher_option`, :func:`precision_option`,
:func:`resume_option` and :func:`training_kwargs`.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Callable, Collection, Sequence

from wsod import STAGES  # noqa: F401  (the subcommands, in pipeline order)
from wsod.utils.options import Option, add_options, by_dest


def kwargs_of(args, *names: str) -> dict:
    """The named options that were given (not None), as keyword arguments for ``run``."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def stage_declarations(stage: str) -> dict[str, Option]:
    """The options of ``wsod <stage>`` by dest, in declaration order (its ``OPTIONS``)."""
    return by_dest(importlib.import_module(f"wsod.commands.{stage}").OPTIONS)


def stage_options(stage: str) -> tuple[str, ...]:
    """The option dests of ``wsod <stage>`` (the keys its pipeline section may hold)."""
    return tuple(stage_declarations(stage))


def stage_config_check(stage: str) -> Callable | None:
    """The ``check_config(cfg, config, section)`` of ``wsod <stage>``'s command module, if it
    has one: the stage's own rules on its config with a pipeline section's values applied
    (the pipeline's up-front check calls it; the weak stage's: its phases fit the schedule)."""
    return getattr(importlib.import_module(f"wsod.commands.{stage}"), "check_config", None)


@functools.cache
def stage_actions(stage: str) -> dict[str, argparse.Action]:
    """The argparse actions that ``wsod <stage>``'s ``OPTIONS`` generate, by dest (the first
    of two flags with one dest)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_options(parser, importlib.import_module(f"wsod.commands.{stage}").OPTIONS)
    actions: dict[str, argparse.Action] = {}
    for action in parser._actions:
        actions.setdefault(action.dest, action)
    return actions


def run_kwargs(
    args: argparse.Namespace, options: Sequence[Option], passed: Collection[str] = ()
) -> dict:
    """:func:`kwargs_of` over every option of ``options`` (a command's ``OPTIONS``), except
    those in ``passed`` (given to ``run`` positionally, or used by ``execute`` itself)."""
    return kwargs_of(args, *(n for n in by_dest(options) if n not in passed))


def config_options(cfg_example: str) -> tuple[Option, ...]:
    """``--cfg-options``, ``--seed`` and ``--max-iters`` (a training stage's config).

    Args:
        cfg_example: the ``KEY=VALUE`` example in ``--cfg-options``' help text.
    """
    from wsod.training.options import TrainOptions

    return (
        Option(
            "--cfg-options",
            nargs="+",
            metavar="KEY=VALUE",
            help=f"override config keys, mmdet style (e.g. {cfg_example}); a key the resolved "
            "config does not have is refused (typos), write +KEY=VALUE to add a new one",
        ),
        Option("--seed", type=int, low=0, help=f"random seed [{TrainOptions.seed}]"),
        Option("--max-iters", type=int, low=1, help="override the schedule's iterations"),
    )


def launcher_option() -> Option:
    """``--launcher`` (mmengine's launchers; see :mod:`wsod.training.dist`)."""
    from wsod.training.options import TrainOptions

    return Option(
        "--launcher",
        choices=("none", "pytorch", "slurm", "mpi"),
        help="mmengine launcher: 'pytorch' under `torchrun --nproc_per_node=N -m wsod ...` "
        "(CPU: gloo, GPU: nccl), 'slurm' under `srun ... python -m wsod ...` (GPUs) "
        f"[{TrainOptions.launcher}]",
    )


def precision_option() -> Option:
    """``--precision`` (:mod:`wsod.training.precision`: its values; the default is
    :class:`~wsod.training.TrainOptions`', ``DEFAULT_PRECISION``)."""
    from wsod.training.options import TrainOptions
    from wsod.training.precision import PRECISIONS

    return Option(
        "--precision",
        choices=PRECISIONS,
        help="bf16 = autocast in training and detection (mmcv's NMS and RoIAlign stay fp32), "
        "fp32 = none, auto = whichever this CPU computes faster: bf16 where it has native bf16 "
        "(AVX512_BF16 / AMX) and no GPU is in use, fp32 where it would emulate it (AVX-512 "
        "without them), a short calibration where its flags cannot tell (cached in "
        "$WSOD_CACHE/precision.json); the stage prints its choice and why; part of the run's "
        f"fingerprint [{TrainOptions.precision}]",
    )


def resume_option() -> Option:
    """``--no-resume`` (``resume=False``; left None otherwise, so ``run`` resumes)."""
    return Option(
        "--no-resume",
        dest="resume",
        action="store_const",
        const=False,
        help="start over instead of resuming from the work dir's last checkpoint",
    )


def parse_cfg_options(opts) -> dict | None:
    """``["a.b=1", "c=[1,2]"]`` (mmengine ``DictAction`` syntax) or a dict -> dict."""
    if opts is None or isinstance(opts, dict):
        return opts
    from mmengine.config import DictAction

    ns = argparse.Namespace()
    for opt in opts:
        try:
            # a dict(...) value: DictAction keeps a flat one as a string, recurses on a nested one
            if str(opt).partition("=")[2].strip().startswith("dict("):
                raise ValueError(opt)
            DictAction(option_strings=[], dest="cfg_options")(None, ns, [opt])
        except (RecursionError, ValueError, SyntaxError):
            raise ValueError(
                f"--cfg-options {opt!r}: cannot parse the value; values are numbers, strings, "
                "None/True/False, lists [a,b] or tuples (a,b); give a dict as one KEY.SUB=VALUE "
                "per entry (e.g. +model.roi_head.refine.iters=10)"
            ) from None
    return ns.cfg_options


def training_kwargs(
    args: argparse.Namespace,
    options: Sequence[Option],
    passed: Collection[str],
    parse_infer: Callable[[list], list],
    options_class: type,
) -> dict:
    """:func:`run_kwargs` with ``infer`` parsed by ``parse_infer``, ``cfg_options`` by
    :func:`parse_cfg_options` (when given), and the stage's options (the fields of
    ``options_class``, a :class:`~wsod.training.TrainOptions`) as one ``options`` object, the
    options not given left at its defaults."""
    kwargs = run_kwargs(args, options, passed)
    if "infer" in kwargs:
        kwargs["infer"] = parse_infer(kwargs["infer"])
    if "cfg_options" in kwargs:
        kwargs["cfg_options"] = parse_cfg_options(kwargs["cfg_options"])
    values = {n: kwargs.pop(n) for n in options_class.names() if n in kwargs}
    return {**kwargs, "options": options_class(**values)}
