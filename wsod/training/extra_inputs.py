"""Extra training inputs: how a project plugs more training data into the strong stage.

A strong config may name, under ``strong_inputs = dict(type=..., ...)``, a class registered in
:data:`STRONG_INPUTS` (the config's ``custom_imports`` imports the module that registers it, e.g.
``projects/soft_teacher``). The strong stage then asks it for one more file to write beside the
training annotations (:meth:`StrongInputs.make`) and lets it point the config's datasets at both
(:meth:`StrongInputs.wire`). The file is validated as a weak-label split on write and on read,
is part of the run's fingerprint, and its provenance (``inputs``) goes into every artifact's
sidecar. Without ``strong_inputs`` the stage trains on the training annotations alone.

The core never imports a project: it only looks the name up in this registry.

Why it stays in the core though only ``projects/soft_teacher`` uses it today: it is the one
plug-in point for training data beyond the pseudo labels (unlabelled images of a semi-supervised
method, a second black box's split), which the pseudo-label levers of issue #53 are expected to
need; if none has used it when that issue closes, it moves into the project.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmengine.registry import Registry

STRONG_INPUTS = Registry("wsod strong-stage extra inputs")
"""Classes a strong config's ``strong_inputs`` may name (subclasses of :class:`StrongInputs`)."""

KEY = "strong_inputs"


@dataclass(frozen=True)
class TrainingSet:
    """What the strong stage knows about the run it is setting up.

    Attributes:
        config: the strong config file (named in errors).
        annotations: the training annotations (COCO instances, boxes xywh).
        train_file: the file they were built from (pseudo labels or real boxes).
        train_split: the ``train_split`` argument (a weak-label split json), or None.
        fully_supervised: the fully supervised reference (real boxes).
        data_root: the images' folder.
        work_dir: the stage's work dir.
        prefix: ``'fsd_'`` for the reference's files, else ``''``.
    """

    config: str
    annotations: dict
    train_file: Path
    train_split: Path | None
    fully_supervised: bool
    data_root: Path
    work_dir: Path
    prefix: str


@dataclass
class ExtraInputs:
    """One extra file of the run.

    Attributes:
        name: short name, e.g. ``'unlabeled'``: the run record holds ``<name>_sha256``.
        path: where the stage writes ``data`` (rank 0, atomically, with a sidecar).
        data: a weak-label split (:func:`wsod.contracts.validate_split`).
        inputs: files ``data`` was read from (sidecar provenance).
        record: more entries for the run record.
    """

    name: str
    path: Path
    data: dict
    inputs: list[Path] = field(default_factory=list)
    record: dict = field(default_factory=dict)


class StrongInputs:
    """Base class of a ``strong_inputs`` entry; subclasses implement both methods."""

    def make(self, cfg: Any, training: TrainingSet) -> ExtraInputs:
        """The extra file's content and path.

        Raises:
            ValueError: the message names the file and the fix.
        """
        raise NotImplementedError

    def wire(
        self, cfg: Any, set_dataset: Callable[[Any, Path], None], ann_path: Path, extra: ExtraInputs
    ) -> None:
        """Point ``cfg``'s training datasets at ``ann_path`` and ``extra.path`` with
        ``set_dataset(dataset_cfg, ann_file)`` (the stage's dataset wiring).

        Raises:
            ValueError: the config's datasets do not fit (the message names the fix).
        """
        raise NotImplementedError


def build_strong_inputs(cfg: Any, where: str) -> StrongInputs | None:
    """The config's ``strong_inputs`` built from :data:`STRONG_INPUTS`, or None.

    Raises:
        ValueError: an unknown type (its module not in ``custom_imports``) or bad arguments.
    """
    spec = cfg.get(KEY)
    if not spec:
        return None
    spec = dict(spec)
    name = spec.get("type")
    if name not in STRONG_INPUTS.module_dict:
        raise ValueError(
            f"{where}: {KEY}.type={name!r} is not registered (known: "
            f"{sorted(STRONG_INPUTS.module_dict)}); add the module that registers it to the "
            "config's custom_imports"
        )
    try:
        return STRONG_INPUTS.build(spec)
    except TypeError as e:
        raise ValueError(f"{where}: {KEY}={spec}: {e}") from e
