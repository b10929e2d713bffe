"""Prepare a training stage's mmdet config: load it, merge ``--cfg-options`` strictly, set the
number of classes and the run's work dir, seed and launcher.

Strict ``--cfg-options``: every dotted key must exist in the resolved config (the config file
with its ``_base_`` files), so a typo such as ``model.test_cfg.score_thrr=0`` is refused with
the near matches instead of running with the default. A key the config does not have yet is
written with a leading ``+`` (:data:`NEW_KEY_PREFIX`): ``+model.test_cfg.flip=True``. The same
check covers the ``cfg_options`` of a pipeline file's stage section (they reach the stage the
same way).
"""

from __future__ import annotations

import copy
import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod.training.dist import setup_dist
from wsod.training.options import TrainOptions
from wsod.training.precision import set_precision

TRAIN_KEYS = ("train_dataloader", "train_cfg", "optim_wrapper", "param_scheduler")
"""Config keys of the training loop (None in a test-only config)."""
EVAL_KEYS = ("val_dataloader", "val_cfg", "val_evaluator")
"""Config keys of the validation loop."""
TEST_KEYS = ("test_dataloader", "test_cfg", "test_evaluator")
"""Config keys of the test loop (None in a training-only config)."""

NEW_KEY_PREFIX = "+"
"""``--cfg-options +a.b=1``: ``a.b`` is new (not in the config); without it, a missing key is
an error."""


class ConfigKeyError(KeyError):
    """A ``--cfg-options`` key the config does not have (see :data:`NEW_KEY_PREFIX`)."""

    def __str__(self) -> str:  # KeyError quotes its message
        return str(self.args[0])


def _missing_part(tree: Any, parts: Sequence[str]) -> int | None:
    """Index of the first part of a dotted key that ``tree`` lacks, None when all exist."""
    node = tree
    for i, part in enumerate(parts):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return i
    return None


def _dotted_keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a nested dict/list (list items by index)."""
    if isinstance(node, Mapping):
        items = [(str(k), v) for k, v in node.items()]
    elif isinstance(node, list | tuple):
        items = [(str(i), v) for i, v in enumerate(node)]
    else:
        return []
    keys = []
    for k, v in items:
        keys.append(prefix + k)
        keys += _dotted_keys(v, prefix + k + ".")
    return keys


def _near_matches(tree: Any, key: str, parts: Sequence[str], missing: int) -> list[str]:
    """Keys of ``tree`` close to ``key``: siblings of the missing part, else any dotted key."""
    parent = tree
    for part in parts[:missing]:
        parent = parent[int(part)] if isinstance(parent, list | tuple) else parent[part]
    prefix = ".".join(parts[:missing])
    prefix = prefix + "." if prefix else ""
    names = [str(k) for k in parent] if isinstance(parent, Mapping) else []
    near = [prefix + n for n in difflib.get_close_matches(parts[missing], names, n=3)]
    if not near:  # e.g. a misplaced level: model.test_cfg.score_thr for model.test_cfg.rcnn...
        near = difflib.get_close_matches(key, _dotted_keys(tree), n=3, cutoff=0.8)
    return [n for n in near if not key.startswith(n + ".")]


def merge_cfg_options(
    cfg: Any, cfg_options: Mapping | None, config: str | os.PathLike = "config"
) -> None:
    """Merge ``--cfg-options`` into ``cfg`` (in place); refuse a key ``cfg`` does not have.

    Args:
        cfg: the loaded ``mmengine.config.Config``.
        cfg_options: ``{dotted key: value}``; a key starting with ``+`` may be new.
        config: the config file (named in the error).

    Raises:
        ConfigKeyError: a key (without ``+``) that is not in the resolved config; the message
            names the key, the config file and the near matches.
    """
    if not cfg_options:
        return
    tree = cfg.to_dict()
    merged = {}
    for key, value in cfg_options.items():
        key = str(key)
        if key.startswith(NEW_KEY_PREFIX):
            merged[key[len(NEW_KEY_PREFIX) :]] = value
            continue
        parts = key.split(".")
        missing = _missing_part(tree, parts)
        if missing is not None:
            near = _near_matches(tree, key, parts, missing)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            raise ConfigKeyError(
                f"--cfg-options {key}: {config} (with its _base_ files) has no key "
                f"{'.'.join(parts[: missing + 1])!r}; {hint}to add a new key write "
                f"{NEW_KEY_PREFIX}{key}=..."
            )
        merged[key] = value
    cfg.merge_from_dict(merged)


def load_config(
    config: str | os.PathLike,
    cfg_options: Mapping | None = None,
    *,
    error: type[Exception] = FileNotFoundError,
    hint: str = "",
):
    """``Config.fromfile`` + strict ``--cfg-options``; imports ``wsod.models`` (registries,
    resume).

    Args:
        config: mmdet config file.
        cfg_options: dotted-key overrides (``--cfg-options``; ``+key`` for a new key).
        error: raised when ``config`` is not a file or a ``cfg_options`` key is unknown.
        hint: where the configs are, appended to the missing-file message.

    Returns:
        The ``mmengine.config.Config``.
    """
    from mmengine.config import Config

    import wsod.models  # noqa: F401  (registers WSOD modules, enables safe resume)

    if not Path(config).is_file():
        raise error(f"{config}: no such config; {hint}")
    cfg = Config.fromfile(str(config))
    try:
        merge_cfg_options(cfg, cfg_options, config)
    except ConfigKeyError as e:
        raise error(str(e)) from e
    return cfg


def without(cfg: Any, keys: Sequence[str]) -> Any:
    """A deep copy of ``cfg`` with ``keys`` set to None (e.g. ``TEST_KEYS``: no test loop)."""
    out = copy.deepcopy(cfg)
    for key in keys:
        out[key] = None
    return out


def set_num_classes(node: Any, k: int, in_rpn: bool = False) -> None:
    """Set every ``num_classes`` of a model config to ``k`` (in place), except the RPN's
    (class-agnostic); covers the weak heads (``roi_head.num_classes``) and mmdet's
    two-stage detectors (``roi_head.bbox_head.num_classes``)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "num_classes" and not in_rpn:
                node[key] = k
            else:
                set_num_classes(value, k, in_rpn or key == "rpn_head")
    elif isinstance(node, list):
        for value in node:
            set_num_classes(value, k, in_rpn)


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
    ``launcher`` (``none``; ``pytorch`` under torchrun, ``slurm`` under srun)."""
    cfg.work_dir = str(work_dir)
    cfg.randomness = {"seed": int(seed), "deterministic": False}
    cfg.launcher = launcher


def prepare_config(
    config: str | os.PathLike,
    options: TrainOptions,
    *,
    work_dir: str | os.PathLike,
    num_classes: int | None,
    error: type[Exception],
    hint: str = "",
    init_backbone: str | os.PathLike | None = None,
):
    """Step 1 of the flow: :func:`load_config` with ``options.cfg_options``,
    :func:`set_num_classes` (when known), :func:`set_runtime` (``options.seed``,
    ``options.launcher``), :func:`set_precision` (``options.precision``), the backbone's start
    from another run's trunk (``init_backbone``: a ``weak_model.json``,
    :mod:`wsod.training.init_backbone`) and, under a launcher, the process group
    (:func:`wsod.training.dist.setup_dist`). The stage then wires its datasets into the
    returned config."""
    cfg = load_config(config, options.cfg_options, error=error, hint=hint)
    launcher = options.launcher
    setup_dist(launcher, error=error, dist_cfg=(cfg.get("env_cfg") or {}).get("dist_cfg"))
    if num_classes is not None:
        set_num_classes(cfg.model, int(num_classes))
    set_runtime(cfg, work_dir, options.seed, launcher)
    set_precision(cfg, options.precision, error=error)
    if init_backbone is not None:
        from wsod.training.init_backbone import init_backbone_from

        init_backbone_from(cfg, init_backbone, error=error)
    return cfg


def add_cpu_share_hook(cfg: Any) -> None:
    """Add ``WSODCPUShareHook`` to ``cfg.custom_hooks`` when ``$WSOD_JOBS_DIR`` is set (wsod
    jobs run at once share the cores, :mod:`wsod.utils.cpu_share`); changes ``cfg`` in place.
    Called on the config a Runner is built from, after the run's fingerprint was taken."""
    from wsod.utils import cpu_share

    hooks = list(cfg.get("custom_hooks") or [])
    if cpu_share.jobs_dir() is None or any(h.get("type") == "WSODCPUShareHook" for h in hooks):
        return
    cfg.custom_hooks = [*hooks, {"type": "WSODCPUShareHook"}]


def add_step_timer_hook(cfg: Any) -> None:
    """Add ``WSODStepTimerHook`` to ``cfg.custom_hooks`` (seconds per training iteration and
    per detected image in the sidecars: :mod:`wsod.models.step_timer_hook`); changes ``cfg`` in
    place. Called on the config a Runner is built from, after the run's fingerprint was taken."""
    import wsod.models.step_timer_hook  # noqa: F401  (registers the hook)

    hooks = list(cfg.get("custom_hooks") or [])
    if not any(str(h.get("type")).endswith("WSODStepTimerHook") for h in hooks):
        cfg.custom_hooks = [*hooks, {"type": "mmdet.WSODStepTimerHook"}]


def add_rng_state_hook(cfg: Any) -> None:
    """Add ``WSODRNGStateHook`` to ``cfg.custom_hooks`` (a resumed run then draws the random
    numbers the interrupted one would have: :mod:`wsod.models.rng_state_hook`); changes ``cfg``
    in place. Called on a training Runner's config, after the run's fingerprint was taken. The
    type is scoped (``mmdet.``): it resolves whatever the config's ``default_scope``."""
    import wsod.models.rng_state_hook  # noqa: F401  (registers the hook)

    hooks = list(cfg.get("custom_hooks") or [])
    if not any(str(h.get("type")).endswith("WSODRNGStateHook") for h in hooks):
        cfg.custom_hooks = [*hooks, {"type": "mmdet.WSODRNGStateHook"}]
