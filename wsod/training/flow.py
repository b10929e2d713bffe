"""Train or resume, then detect: the steps every training stage shares.

A stage builds a :class:`TrainJob` (its prepared config with the datasets wired, and the names
of its run, config and model files) and a :class:`Fingerprint`, then calls
:func:`train_or_resume`; detection is :func:`detection_config` + the stage's test-dataset wiring +
:func:`detect`. Under a launcher (:mod:`wsod.training.dist`) every rank calls the same
functions: rank 0 alone writes files and moves stale checkpoints, the others wait for it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wsod.training.config import (
    EVAL_KEYS,
    TEST_KEYS,
    TRAIN_KEYS,
    add_cpu_share_hook,
    add_rng_state_hook,
    add_step_timer_hook,
    without,
)
from wsod.training.dist import barrier, broadcast, fit_to_device, is_main
from wsod.training.fingerprint import (
    checkpoint_iter,
    latest_checkpoint,
    resume_point,
    set_resume,
)
from wsod.utils.io import write_json_artifact, write_text
from wsod.utils.quiet import quiet_console


@dataclass
class Fingerprint:
    """Which run a work dir's checkpoints must belong to for a resume.

    Attributes:
        current: :func:`wsod.training.run_fingerprint` (or a stage's digest built on it).
        legacy: the same run's fingerprint(s) as older versions wrote it (``LEGACY_VERSIONS``).
        legacy_same: for run files without a fingerprint: ``record -> same run?``.
    """

    current: str
    legacy: str | tuple[str, ...] | None = None
    legacy_same: Callable[[dict], bool] | None = None


@dataclass
class TrainJob:
    """One stage's training run: what :func:`train_or_resume` needs besides the flow itself.

    Attributes:
        stage: ``weak`` or ``strong`` (provenance, experiment names).
        cfg: the prepared config, its training dataset already wired by the stage.
        config: the config file the run started from (recorded).
        work_dir: checkpoints, logs and the files below.
        run_file: the run record (fingerprint + ``record``), written before training.
        config_file: the resolved config, written before training.
        model_file: the final checkpoint, iterations and ``model_record``, after training.
        inputs: training input files (hashed into the records' meta).
        meta: provenance for ``write_json_artifact`` (``stage``, ``seed``, ``started``, ...).
        record: extra fields of the run file.
        model_record: extra fields of the model file (classes, supervision).
        train_without: config keys the training Runner does not build (its loops).
        name: experiment-name prefix of the training Runner.
        write_inputs: rank 0 writes files the training dataset reads (before training).
        read_inputs: every rank checks those files once rank 0 wrote them (their contract).
    """

    stage: str
    cfg: Any
    config: str | os.PathLike
    work_dir: Path
    run_file: Path
    config_file: Path
    model_file: Path
    inputs: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    record: dict = field(default_factory=dict)
    model_record: dict = field(default_factory=dict)
    train_without: tuple = EVAL_KEYS + TEST_KEYS
    name: str = "train"
    write_inputs: Callable[[], None] | None = None
    read_inputs: Callable[[], Any] | None = None


@dataclass
class Trained:
    """What :func:`train_or_resume` left: the final checkpoint, the iterations done and the
    checkpoint training resumed from (None: from scratch)."""

    checkpoint: str
    iterations: int
    resumed_from: str | None


def experiment_name(what: str) -> str:
    """Unique per Runner (mmengine keys its logger and visualizer instances by this name);
    the same on every rank."""
    return broadcast(f"{what}_{time.strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:6]}")


def _runner_config(cfg: Any, name: str | None) -> None:
    """The last touches of a config a Runner is built from: a unique experiment name (the
    visualizer named alike: mmengine shares instances by name), CPU sharing and the launcher's
    device settings, the step timer. After the fingerprint was taken."""
    if name is not None:
        cfg.experiment_name = experiment_name(name)
    if cfg.get("visualizer") and cfg.get("experiment_name"):
        cfg.visualizer.name = cfg.experiment_name
    add_cpu_share_hook(cfg)
    add_step_timer_hook(cfg)
    fit_to_device(cfg)


def train(cfg: Any, name: str | None = None) -> int:
    """Build a ``Runner`` from ``cfg`` and train; returns the iterations done."""
    from mmengine.runner import Runner

    _runner_config(cfg, name)
    add_rng_state_hook(cfg)
    with quiet_console():  # known-harmless library lines off the terminal (wsod.utils.quiet)
        runner = Runner.from_cfg(cfg)
    runner.train()
    return int(runner.iter)


def trained_checkpoint(work_dir: str | os.PathLike, *, error: type[Exception]) -> str:
    """The checkpoint training left in ``work_dir``; raises ``error`` when there is none."""
    ckpt = latest_checkpoint(work_dir)
    if ckpt is None:
        raise error(
            f"{work_dir}: training ended without a checkpoint; check the "
            "config's default_hooks.checkpoint"
        )
    return ckpt


def _finished(cfg: Any, resumed: str | None) -> int | None:
    """The iterations of a resumed checkpoint that already ends the schedule, else None."""
    done = checkpoint_iter(resumed)
    max_iters = (cfg.get("train_cfg") or {}).get("max_iters")
    return done if done is not None and max_iters is not None and done >= max_iters else None


def train_or_resume(
    job: TrainJob, fingerprint: Fingerprint, *, resume: bool, error: type[Exception]
) -> Trained:
    """Resume the same run or train from scratch; skip training when it already finished.

    Rank 0 picks the resume point (moving another run's checkpoints to ``stale/``), writes
    ``job.write_inputs``, the run file and the resolved config; every rank then trains (or
    skips a finished run: mmengine would replay the whole dataloader to reach the end), waits
    for rank 0's last checkpoint, and rank 0 writes the model file.

    Returns:
        :class:`Trained`; raises ``error`` when training left no checkpoint.
    """
    resumed = None
    if is_main():
        if resume:
            resumed = resume_point(
                job.work_dir,
                job.run_file,
                fingerprint.current,
                fingerprint.legacy_same,
                fingerprint.legacy,
            )[0]
        if job.write_inputs is not None:
            job.write_inputs()
        record = {"fingerprint": fingerprint.current, **job.record, "config": str(job.config)}
        write_json_artifact(job.run_file, record, inputs=job.inputs, **job.meta)
    resumed = broadcast(resumed)
    set_resume(job.cfg, resumed)
    if is_main():
        job.work_dir.mkdir(parents=True, exist_ok=True)
        write_text(job.config_file, job.cfg.pretty_text)
    barrier()  # the files rank 0 wrote (e.g. the training annotations) exist for every rank
    if job.read_inputs is not None:
        job.read_inputs()
    iterations = _finished(job.cfg, resumed)
    if iterations is None:
        iterations = train(without(job.cfg, job.train_without), f"{job.name}")
    barrier()  # rank 0 saved the last checkpoint
    ckpt = trained_checkpoint(job.work_dir, error=error)
    if is_main():
        write_json_artifact(
            job.model_file,
            {
                "checkpoint": ckpt,
                "config": str(job.config_file),
                "iterations": iterations,
                **job.model_record,
                "resumed_from": resumed,
            },
            indent=2,
            config=job.cfg.to_dict(),
            inputs=job.inputs,
            **job.meta,
        )
    barrier()
    return Trained(ckpt, iterations, resumed)


def detection_checkpoint(
    cfg: Any, work_dir: Path, config_file: Path, *, error: type[Exception], hint: str
) -> str:
    """The checkpoint to detect with when nothing is trained: the config's ``load_from``, else
    the work dir's last; rank 0 records the config it runs with (unless training did)."""
    ckpt = cfg.get("load_from") or latest_checkpoint(work_dir)
    if not ckpt:
        raise error(f"{work_dir}: no checkpoint to detect with; {hint}")
    if is_main() and not config_file.is_file():
        write_text(config_file, without(cfg, TRAIN_KEYS + EVAL_KEYS).pretty_text)
    return ckpt


def detection_config(cfg: Any, name: str) -> Any:
    """A copy of ``cfg`` with only its test loop, for :func:`detect` (the stage points its
    test dataset at the split); ``name``: the experiment-name prefix."""
    out = without(cfg, TRAIN_KEYS + EVAL_KEYS)
    out.experiment_name = experiment_name(name)
    return out


def detect(
    cfg: Any,
    checkpoint: str,
    out: str | os.PathLike,
    meta: Mapping,
    *,
    default_evaluator: Mapping,
) -> None:
    """Detect with ``checkpoint`` through ``runner.test()``; ``WSODDumpCocoResults`` writes
    ``out`` (a COCO results json) with ``meta`` in its ``.meta.json``.

    Under a launcher every rank detects on its shard of the split (mmengine's
    ``DefaultSampler``); mmengine gathers the results and rank 0 writes ``out``.

    Args:
        cfg: a test config (:func:`detection_config`, its dataset pointing at the split); changed
            in place.
        checkpoint: the weights to load (never resumed).
        out: the results json.
        meta: the evaluator's ``meta`` (stage, seed, config, inputs, extra).
        default_evaluator: the evaluator to use when the config's ``test_evaluator`` is not a
            ``WSODDumpCocoResults``.
    """
    from mmengine.runner import Runner

    evaluator = dict(cfg.get("test_evaluator") or {})
    if evaluator.get("type") != "WSODDumpCocoResults":
        evaluator = dict(default_evaluator)
    evaluator["out_file"] = str(out)
    evaluator["meta"] = dict(meta)
    cfg.test_evaluator = evaluator
    cfg.load_from = checkpoint
    cfg.resume = False
    _runner_config(cfg, None)
    with quiet_console():  # known-harmless library lines off the terminal (wsod.utils.quiet)
        runner = Runner.from_cfg(cfg)
    runner.test()
    barrier()  # rank 0 wrote ``out``
