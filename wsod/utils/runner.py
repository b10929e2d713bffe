"""mmengine ``Runner`` plumbing shared by the training stages (:mod:`wsod.stages.weak`,
:mod:`wsod.stages.strong`).

Load a config and merge ``--cfg-options``; set the run's work dir, seed and launcher; resume
from a work dir's last checkpoint when it belongs to the same run (same training config and
inputs; another run's checkpoints are moved aside to ``<work_dir>/stale/<time>/``); train;
find the checkpoint training left; detect on a split with ``runner.test()`` while
``WSODDumpCocoResults`` writes the detections.

The stages keep their own checks and messages: functions that can refuse an input take the
stage's error class (``error``) and a hint for the fix (``hint``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

TRAIN_KEYS = ("train_dataloader", "train_cfg", "optim_wrapper", "param_scheduler")
"""Config keys of the training loop (None in a test-only config)."""
EVAL_KEYS = ("val_dataloader", "val_cfg", "val_evaluator")
"""Config keys of the validation loop."""
TEST_KEYS = ("test_dataloader", "test_cfg", "test_evaluator")
"""Config keys of the test loop (None in a training-only config)."""


def load_config(
    config: str | os.PathLike,
    cfg_options: Mapping | None = None,
    *,
    error: type[Exception] = FileNotFoundError,
    hint: str = "",
):
    """``Config.fromfile`` + ``--cfg-options``; imports ``wsod.models`` (registries, resume).

    Args:
        config: mmdet config file.
        cfg_options: dotted-key overrides merged into the config (``--cfg-options``).
        error: raised when ``config`` is not a file.
        hint: where the configs are, appended to that error's message.

    Returns:
        The ``mmengine.config.Config``.
    """
    from mmengine.config import Config

    import wsod.models  # noqa: F401  (registers WSOD modules, enables safe resume)

    if not Path(config).is_file():
        raise error(f"{config}: no such config; {hint}")
    cfg = Config.fromfile(str(config))
    if cfg_options:
        cfg.merge_from_dict(dict(cfg_options))
    return cfg


def without(cfg: Any, keys: Sequence[str]) -> Any:
    """A deep copy of ``cfg`` with ``keys`` set to None (e.g. ``TEST_KEYS``: no test loop)."""
    out = copy.deepcopy(cfg)
    for key in keys:
        out[key] = None
    return out


def set_max_iters(
    cfg: Any, max_iters: int, *, error: type[Exception] = ValueError, hint: str = ""
) -> None:
    """Set ``train_cfg.max_iters`` of an iteration-based config.

    Args:
        cfg: the config (changed in place).
        max_iters: the number of training iterations.
        error: raised when the config's train loop is not ``IterBasedTrainLoop``.
        hint: what to do instead, appended to that error's message after ``"; "``.
    """
    loop = cfg.get("train_cfg") or {}
    if loop.get("type") not in ("IterBasedTrainLoop", "mmengine.IterBasedTrainLoop"):
        raise error(
            f"max_iters needs an iteration-based config (train_cfg.type="
            f"'IterBasedTrainLoop'), got {loop.get('type')!r}" + (f"; {hint}" if hint else "")
        )
    cfg.train_cfg.max_iters = int(max_iters)


def set_runtime(cfg: Any, work_dir: str | os.PathLike, seed: int, launcher: str) -> None:
    """Set the config's ``work_dir``, ``randomness`` (``seed``, not deterministic) and
    ``launcher`` (``none``; ``pytorch`` under torchrun for multi-GPU)."""
    cfg.work_dir = str(work_dir)
    cfg.randomness = {"seed": int(seed), "deterministic": False}
    cfg.launcher = launcher


def latest_checkpoint(work_dir: str | os.PathLike) -> str | None:
    """The work dir's last mmengine checkpoint (its ``last_checkpoint`` file), else None."""
    from mmengine.runner.checkpoint import find_latest_checkpoint

    return find_latest_checkpoint(str(work_dir))


RUNTIME_KEYS = ("work_dir", "experiment_name", "load_from", "resume", "launcher")
"""Config keys that do not change what a training run computes (left out of its fingerprint)."""


FINGERPRINT_VERSION = 2
"""Version 2 leaves the model's ``test_cfg`` out; version 1 (run files of older versions) kept it."""


def without_test_cfg(obj: Any) -> Any:
    """A copy of a (nested) dict/list with every ``test_cfg`` key dropped: mmdet models keep
    their inference-only settings (NMS, score thresholds, test-time augmentation) there."""
    if isinstance(obj, Mapping):
        return {k: without_test_cfg(v) for k, v in obj.items() if k != "test_cfg"}
    if isinstance(obj, list | tuple):
        return [without_test_cfg(v) for v in obj]
    return obj


def versioned_digest(h: Any, version: int) -> str:
    """A fingerprint's text: ``'v<version>:<hex>'``, or the plain hex of version 1."""
    return h.hexdigest() if version == 1 else f"v{version}:{h.hexdigest()}"


def run_fingerprint(
    cfg: Any, inputs: Sequence[str | os.PathLike], *, version: int = FINGERPRINT_VERSION
) -> str:
    """SHA-256 of what a training run computes: the training config (without the eval/test
    loops, the model's ``test_cfg`` and :data:`RUNTIME_KEYS`; with the seed) and the contents
    of its input files. Changing inference-only settings therefore never retrains.

    Args:
        version: 2 (current; returned as ``'v2:<hex>'``) or 1 (plain hex, the model's
            ``test_cfg`` included): what run files written by older versions hold.
    """
    from wsod.utils.io import file_sha256

    train = without(cfg, EVAL_KEYS + TEST_KEYS).to_dict()
    for key in RUNTIME_KEYS:
        train.pop(key, None)
    if version >= 2 and "model" in train:
        train["model"] = without_test_cfg(train["model"])
    h = hashlib.sha256(json.dumps(train, sort_keys=True, default=repr).encode())
    for path in inputs:
        h.update(file_sha256(path).encode())
    return versioned_digest(h, version)


def resume_point(
    work_dir: str | os.PathLike,
    run_file: str | os.PathLike,
    fingerprint: str,
    legacy_same: Callable[[dict], bool] | None = None,
    legacy_fingerprint: str | None = None,
) -> tuple[str | None, Path | None]:
    """The checkpoint to resume from, for a run with ``fingerprint`` in ``work_dir``.

    ``run_file`` (json, written by the stage before training) records the fingerprint of the
    run whose checkpoints the work dir holds. Same fingerprint: resume from the last checkpoint.
    Another run (the config, seed or training inputs changed, e.g. ``make`` rerunning a stage
    after a pipeline edit): its checkpoints and ``run_file`` are moved to
    ``<work_dir>/stale/<time>/`` (nothing is deleted) and training starts over.

    Args:
        work_dir: the run's work dir.
        run_file: the stage's run record in ``work_dir``.
        fingerprint: :func:`run_fingerprint` of the run about to train.
        legacy_same: for a run file without a fingerprint (older versions): a callable
            ``record -> bool`` saying whether it is the same run (default: it is).
        legacy_fingerprint: the run's fingerprint as older versions computed it (version 1 of
            :func:`run_fingerprint`); a run file holding it is the same run.

    Returns:
        ``(checkpoint or None, the folder the stale run was moved to or None)``.
    """
    from wsod.utils.io import read_json

    work_dir, run_file = Path(work_dir), Path(run_file)
    last = latest_checkpoint(work_dir)
    if last is None:
        return None, None
    record = read_json(run_file) if run_file.is_file() else {}
    if "fingerprint" in record:
        same = record["fingerprint"] in {fingerprint, legacy_fingerprint}
    else:
        same = legacy_same(record) if (legacy_same and record) else True
    if same:
        return last, None
    stale = work_dir / "stale" / time.strftime("%Y%m%d_%H%M%S")
    stale.mkdir(parents=True, exist_ok=True)
    moved = [*work_dir.glob("iter_*.pth"), *work_dir.glob("epoch_*.pth")]
    moved += [f for f in (work_dir / "last_checkpoint", run_file) if f.is_file()]
    for f in moved:
        f.rename(stale / f.name)
    print(
        f"{work_dir}: its checkpoints belong to another run (config, seed or training inputs "
        f"changed); moved {len(moved)} files to {stale} and training from scratch",
        file=sys.stderr,
    )
    return None, stale


def set_resume(cfg: Any, checkpoint: str | None) -> None:
    """Resume training from ``checkpoint``; None: start over from the config's ``load_from``."""
    cfg.resume = bool(checkpoint)
    cfg.load_from = checkpoint or cfg.get("load_from")


def add_cpu_share_hook(cfg: Any) -> None:
    """Add ``WSODCPUShareHook`` to ``cfg.custom_hooks`` when ``$WSOD_JOBS_DIR`` is set (wsod
    jobs run at once share the cores, :mod:`wsod.utils.cpu_share`); changes ``cfg`` in place.
    Called on the config a Runner is built from, after the run's fingerprint was taken."""
    from wsod.utils import cpu_share

    hooks = list(cfg.get("custom_hooks") or [])
    if cpu_share.jobs_dir() is None or any(h.get("type") == "WSODCPUShareHook" for h in hooks):
        return
    cfg.custom_hooks = [*hooks, {"type": "WSODCPUShareHook"}]


def train(cfg: Any) -> int:
    """Build a ``Runner`` from ``cfg`` and train; returns the iterations done."""
    from mmengine.runner import Runner

    add_cpu_share_hook(cfg)
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


def dump_detections(
    cfg: Any,
    checkpoint: str,
    out: str | os.PathLike,
    meta: Mapping,
    *,
    default_evaluator: Mapping,
) -> None:
    """Detect with ``checkpoint`` through ``runner.test()``; ``WSODDumpCocoResults`` writes
    ``out`` (a COCO results json) with ``meta`` in its ``.meta.json``.

    Args:
        cfg: a test config (its test dataloader already points at the split); changed in place.
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
    add_cpu_share_hook(cfg)
    runner = Runner.from_cfg(cfg)
    runner.test()
