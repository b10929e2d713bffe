"""One module per subcommand: ``HELP``, ``EXAMPLES``, ``add_arguments(parser)`` and
``execute(args)``, which unpacks the arguments into ``wsod.stages.<stage>.run``.

Options default to ``None`` so that ``--pipeline`` can fill them; the real defaults are the
keyword defaults of ``run``.

The training commands (``weak``, ``strong``) share their mmengine options: see
:func:`add_config_options`, :func:`add_launcher_option`, :func:`add_resume_option` and
:func:`training_kwargs`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


def kwargs_of(args, *names: str) -> dict:
    """The named options that were given (not None), as keyword arguments for ``run``."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def add_config_options(parser: argparse.ArgumentParser, cfg_example: str) -> None:
    """Add ``--cfg-options``, ``--seed`` and ``--max-iters`` (a training stage's config).

    Args:
        parser: the subcommand's parser.
        cfg_example: the ``KEY=VALUE`` example in ``--cfg-options``' help text.
    """
    parser.add_argument(
        "--cfg-options",
        nargs="+",
        metavar="KEY=VALUE",
        help=f"override config keys, mmdet style (e.g. {cfg_example}); a key the resolved "
        "config does not have is refused (typos), write +KEY=VALUE to add a new one",
    )
    parser.add_argument("--seed", type=int, help="random seed [0]")
    parser.add_argument("--max-iters", type=int, help="override the schedule's iterations")


def add_launcher_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--launcher`` (mmengine's launchers; see :mod:`wsod.training.dist`)."""
    parser.add_argument(
        "--launcher",
        choices=("none", "pytorch", "slurm", "mpi"),
        help="mmengine launcher: 'pytorch' under `torchrun --nproc_per_node=N -m wsod ...` "
        "(CPU: gloo, GPU: nccl), 'slurm' under `srun ... python -m wsod ...` (GPUs) [none]",
    )


def add_resume_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-resume`` (``resume=False``; left None otherwise, so ``run`` resumes)."""
    parser.add_argument(
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
    DictAction(option_strings=[], dest="cfg_options")(None, ns, list(opts))
    return ns.cfg_options


def training_kwargs(
    args: argparse.Namespace, names: Sequence[str], parse_infer: Callable[[list], list]
) -> dict:
    """:func:`kwargs_of` with ``infer`` parsed by ``parse_infer`` and ``cfg_options`` by
    :func:`parse_cfg_options` (when given)."""
    kwargs = kwargs_of(args, *names)
    if "infer" in kwargs:
        kwargs["infer"] = parse_infer(kwargs["infer"])
    if "cfg_options" in kwargs:
        kwargs["cfg_options"] = parse_cfg_options(kwargs["cfg_options"])
    return kwargs
