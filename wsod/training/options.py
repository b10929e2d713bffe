"""The options of a training stage, declared once: :class:`TrainOptions` (shared by ``wsod weak``
and ``wsod strong``), subclassed by each stage for what is its own (``WeakOptions`` in
:mod:`wsod.stages.weak`, ``StrongOptions`` in :mod:`wsod.stages.strong`).

A field's default is the stage's default: ``run`` reads it from the dataclass, and the CLI's
``--help`` prints it from there (the CLI's own defaults stay None so that ``--pipeline`` can
fill an option not given on the command line). A field's name is the option's dest (``--seed``
-> ``seed``) and its key in a pipeline file's stage section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from wsod.training.precision import DEFAULT_PRECISION

Options = TypeVar("Options", bound="TrainOptions")


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How a training stage runs its flow (:func:`wsod.training.prepare_config`,
    :func:`wsod.training.train_or_resume`).

    Attributes:
        cfg_options: config keys to override (``--cfg-options``, mmengine's dotted keys; a key
            the resolved config lacks is refused unless written ``+key``).
        seed: random seed (part of the run's fingerprint).
        resume: continue from the work dir's last checkpoint when it belongs to the same run.
        max_iters: the schedule's length instead of the config's (None: the config's).
        launcher: mmengine's launcher (``none``, ``pytorch``, ``slurm``, ``mpi``).
        precision: ``auto``, ``bf16`` or ``fp32`` (:mod:`wsod.training.precision`).
        allow_pickle: allow proposal ``.pkl`` files without their ``.npz`` twin (unpickling
            runs code in the file: trusted files only).
    """

    cfg_options: Mapping | None = None
    seed: int = 0
    resume: bool = True
    max_iters: int | None = None
    launcher: str = "none"
    precision: str = DEFAULT_PRECISION
    allow_pickle: bool = False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields' names: the options' dests and pipeline keys."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls: type[Options], options: Options | None, values: Mapping[str, Any]) -> Options:
        """``options`` (default: all defaults) with ``values`` (field name -> value) replacing
        its fields; a name that is not a field is refused (a TypeError naming it)."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise TypeError(
                f"{cls.__name__}: unknown option(s) {unknown}; the options are {list(cls.names())}"
            )
        return dataclasses.replace(options if options is not None else cls(), **values)
