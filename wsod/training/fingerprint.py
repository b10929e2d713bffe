"""What a training run computes (its fingerprint) and where it resumes from.

A stage records the fingerprint in its run file (``weak_run.json``, ``strong_run.json``) before
training. A later run in the same work dir resumes from the last checkpoint only when the
fingerprints match; another run's checkpoints are moved to ``<work_dir>/stale/<time>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod.training.config import EVAL_KEYS, TEST_KEYS, without

RUNTIME_KEYS = ("work_dir", "experiment_name", "load_from", "resume", "launcher")
"""Config keys that do not change what a training run computes (left out of its fingerprint)."""

FINGERPRINT_VERSION = 5
"""Version 5 writes the config's paths inside the work dir, and those of the input files whose
contents are hashed, as placeholders (:func:`portable_paths`), so a run folder moved or copied
elsewhere still resumes (or, finished, only detects); version 4 also leaves out a
semi-supervised detector's ``semi_test_cfg`` (mmdet's
``SemiBaseDetector``: whether the teacher or the student detects), so detecting with the other
one never retrains; version 3 also leaves out the constructor arguments a model class lists in its
``TEST_TIME_ARGS`` (e.g. the CAM head's box-scoring settings); version 2 left the model's
``test_cfg`` out; version 1 (run files of older versions) kept it. Run files holding an older
version's fingerprint of the same run still resume (:class:`~wsod.training.flow.Fingerprint`)."""

LEGACY_VERSIONS = tuple(range(1, FINGERPRINT_VERSION))
"""The older versions a stage also fingerprints a run with, so that their run files resume."""


def latest_checkpoint(work_dir: str | os.PathLike) -> str | None:
    """The work dir's last mmengine checkpoint (its ``last_checkpoint`` file), else None.

    mmengine writes the checkpoint's absolute path there; in a work dir moved or copied since,
    the checkpoint of that name in ``work_dir`` itself is the one meant."""
    from mmengine.runner.checkpoint import find_latest_checkpoint

    last = find_latest_checkpoint(str(work_dir))
    if last is None:
        return None
    here = Path(work_dir) / Path(last).name
    return str(here) if here.is_file() else last


def checkpoint_iter(path: str | os.PathLike | None) -> int | None:
    """The iteration of mmengine's ``iter_<N>.pth`` checkpoint name, else None."""
    m = re.fullmatch(r"iter_(\d+)\.pth", Path(path).name) if path else None
    return int(m.group(1)) if m else None


def without_test_cfg(obj: Any, keys: tuple[str, ...] = ("test_cfg",)) -> Any:
    """A copy of a (nested) dict/list with every ``test_cfg`` key (or every one of ``keys``)
    dropped: mmdet models keep their inference-only settings (NMS, score thresholds, test-time
    augmentation) there, its semi-supervised detectors also in ``semi_test_cfg``."""
    if isinstance(obj, Mapping):
        return {k: without_test_cfg(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list | tuple):
        return [without_test_cfg(v, keys) for v in obj]
    return obj


def test_time_args(type_name: Any) -> tuple[str, ...]:
    """The ``TEST_TIME_ARGS`` of the model class registered as ``type_name`` (none when it is
    not a registered name): constructor arguments used at inference only."""
    if not isinstance(type_name, str):
        return ()
    from mmdet.registry import MODELS

    import wsod.models  # noqa: F401  (registers the project's modules)

    cls = MODELS.get(type_name)
    return tuple(getattr(cls, "TEST_TIME_ARGS", ())) if cls is not None else ()


def without_test_time_args(obj: Any) -> Any:
    """A copy of a (nested) model config without each module's :func:`test_time_args`."""
    if isinstance(obj, Mapping):
        drop = set(test_time_args(obj.get("type")))
        return {k: without_test_time_args(v) for k, v in obj.items() if k not in drop}
    if isinstance(obj, list | tuple):
        return [without_test_time_args(v) for v in obj]
    return obj


def portable_paths(obj: Any, work_dir: str | os.PathLike | None, hashed: Sequence) -> Any:
    """A copy of a (nested) config in which a path inside ``work_dir`` reads
    ``<work_dir>/...`` and the path of a file in ``hashed`` (whose contents the fingerprint
    hashes beside the config) reads ``<input>``: what a run computes does not depend on where
    its folder lies. Other paths (the image folder, a trunk's weights) stay as they are."""
    roots = {str(Path(work_dir)), str(Path(work_dir).resolve())} if work_dir else set()
    files = {str(Path(p)) for p in hashed} | {str(Path(p).resolve()) for p in hashed}

    def portable(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: portable(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [portable(v) for v in value]
        if not isinstance(value, str):
            return value
        if value in files:
            return "<input>"
        for root in roots:
            if value == root or value.startswith(root + os.sep):
                return "<work_dir>" + value[len(root) :]
        return value

    return portable(obj)


def versioned_digest(h: Any, version: int) -> str:
    """A fingerprint's text: ``'v<version>:<hex>'``, or the plain hex of version 1."""
    return h.hexdigest() if version == 1 else f"v{version}:{h.hexdigest()}"


def run_fingerprint(
    cfg: Any,
    inputs: Sequence[str | os.PathLike],
    *,
    version: int = FINGERPRINT_VERSION,
    hashed_elsewhere: Sequence[str | os.PathLike] = (),
) -> str:
    """SHA-256 of what a training run computes: the training config (without the eval/test
    loops, the model's ``test_cfg`` and :data:`RUNTIME_KEYS`; with the seed) and the contents
    of its input files. Changing inference-only settings therefore never retrains; neither
    does the number of processes (the launcher's settings are added after fingerprinting).

    Args:
        version: 5 (current; returned as ``'v5:<hex>'``), 4 (paths as they are), 3
            (``semi_test_cfg`` included), 2 (``test_time_args`` too) or 1 (plain hex, the model's
            ``test_cfg`` too): what run files written by older versions hold.
        hashed_elsewhere: input files whose contents the caller hashes into its own digest
            (their paths are placeholders from version 5 on, as ``inputs``' are).
    """
    from wsod.utils.io import file_sha256

    train = without(cfg, EVAL_KEYS + TEST_KEYS).to_dict()
    work_dir = train.get("work_dir")
    for key in RUNTIME_KEYS:
        train.pop(key, None)
    if version >= 5:
        train = portable_paths(train, work_dir, [*inputs, *hashed_elsewhere])
    if version >= 2 and "model" in train:
        keys = ("test_cfg", "semi_test_cfg") if version >= 4 else ("test_cfg",)
        train["model"] = without_test_cfg(train["model"], keys)
    if version >= 3 and "model" in train:
        train["model"] = without_test_time_args(train["model"])
    h = hashlib.sha256(json.dumps(train, sort_keys=True, default=repr).encode())
    for path in inputs:
        h.update(file_sha256(path).encode())
    return versioned_digest(h, version)


def resume_point(
    work_dir: str | os.PathLike,
    run_file: str | os.PathLike,
    fingerprint: str,
    legacy_same: Callable[[dict], bool] | None = None,
    legacy_fingerprint: str | Sequence[str] | None = None,
) -> tuple[str | None, Path | None]:
    """The checkpoint to resume from, for a run with ``fingerprint`` in ``work_dir``.

    ``run_file`` (json, written by the stage before training) records the fingerprint of the
    run whose checkpoints the work dir holds. Same fingerprint: resume from the last checkpoint.
    Another run (the config, seed or training inputs changed, e.g. ``make`` rerunning a stage
    after a pipeline edit): its checkpoints and ``run_file`` are moved to
    ``<work_dir>/stale/<time>/`` (nothing is deleted) and training starts over. Call it on
    rank 0 only (:func:`wsod.training.flow.train_or_resume` does).

    Args:
        work_dir: the run's work dir.
        run_file: the stage's run record in ``work_dir``.
        fingerprint: :func:`run_fingerprint` of the run about to train.
        legacy_same: for a run file without a fingerprint (older versions): a callable
            ``record -> bool`` saying whether it is the same run (default: it is).
        legacy_fingerprint: the run's fingerprint(s) as older versions computed it (versions 1
            and 2 of :func:`run_fingerprint`); a run file holding one is the same run.

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
        old = [legacy_fingerprint] if isinstance(legacy_fingerprint, str) else legacy_fingerprint
        same = record["fingerprint"] in {fingerprint, *(old or ())}
    else:
        same = legacy_same(record) if (legacy_same and record) else True
    if same:
        return last, None
    stale = _new_folder(work_dir / "stale", time.strftime("%Y%m%d_%H%M%S"))
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


def _new_folder(parent: Path, name: str) -> Path:
    """A new folder ``parent/name`` (``name_1``, ``name_2``, ... when taken: two moves in the
    same second never overwrite each other)."""
    parent.mkdir(parents=True, exist_ok=True)
    folder, i = parent / name, 0
    while True:
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            i += 1
            folder = parent / f"{name}_{i}"


def set_resume(cfg: Any, checkpoint: str | None) -> None:
    """Resume training from ``checkpoint``; None: start over from the config's ``load_from``."""
    cfg.resume = bool(checkpoint)
    cfg.load_from = checkpoint or cfg.get("load_from")
