"""``WSODAffinityPhaseHook``: train the CAM head's affinity branch after the classifier.

IRN (Ahn, Cho & Kwak, CVPR 2019) trains its inter-pixel relations in a second step, from the
seeds of a finished CAM, with the classifier fixed. This hook makes that second step part of
the same training run: from iteration ``start_iter`` on, the ``WSODCAMHead`` returns its
branches' losses alone (``train_affinity``) and every parameter outside its ``affinity`` and
``instance`` branches (:data:`PHASE_BRANCHES`) stops taking gradients, so the classifier, and
hence the seeds, stay what they were at ``start_iter``. Before it the branch is not run and costs nothing. ``start_iter=0`` with
``load_from`` a trained CAM checkpoint trains the branch alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmdet.registry import HOOKS
from mmengine.hooks import Hook

from wsod.models.hook_utils import bare_model

PHASE_BRANCHES = ("affinity", "instance")
"""The CAM head's branches the phase trains (the learned affinities; IRN's displacement field
and class boundaries); a head needs one of them."""


@HOOKS.register_module()
class WSODAffinityPhaseHook(Hook):
    """Switch a CAM black box to training its affinity branch at ``start_iter``.

    Args:
        start_iter: 0-based iteration from which the branch trains and the rest is frozen.

    Resuming past ``start_iter`` switches at once (the frozen state is not in the checkpoint).
    """

    priority = "NORMAL"

    def __init__(self, start_iter: int) -> None:
        if start_iter < 0:
            raise ValueError(f"WSODAffinityPhaseHook: start_iter must be >= 0, got {start_iter}")
        self.start_iter = int(start_iter)

    @staticmethod
    def _model(runner):
        model = bare_model(runner)
        head = getattr(model, "roi_head", None)
        if all(getattr(head, b, None) is None for b in PHASE_BRANCHES):
            raise TypeError(
                "WSODAffinityPhaseHook needs a weak detector whose roi_head has an affinity "
                "branch or an instance branch (WSODCAMHead(affinity=...) or (instance=...)), not "
                f"{type(model).__name__} with {type(head).__name__}"
            )
        return model

    def before_train(self, runner) -> None:
        """Refuse a schedule that ends before ``start_iter`` when detection reads a branch
        (``refine.type='learned'``, ``scoring.type='instances'``: it would train the
        classifier, then fail to detect);
        otherwise only warn. The weak stage and the pipeline check make the same test on the
        config before anything is written (:func:`schedule_error`); this is the guard for a
        config trained some other way."""
        model = self._model(runner)
        if self.start_iter < runner.max_iters:
            return
        head = model.roi_head
        reads = _reads_branch(head.refine, head.scoring)
        msg = _schedule_message(self.start_iter, runner.max_iters, reads)
        if not reads:
            runner.logger.warning(msg)
            return
        raise ValueError(msg)

    def before_train_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        model = self._model(runner)
        if runner.iter < self.start_iter or model.roi_head.train_affinity:
            return
        model.roi_head.train_affinity = True
        frozen = 0
        trained = tuple(f"roi_head.{b}." for b in PHASE_BRANCHES)
        for name, p in model.named_parameters():
            if not name.startswith(trained):
                frozen += p.requires_grad
                p.requires_grad_(False)
        runner.logger.info(
            f"WSODAffinityPhaseHook: iteration {runner.iter}: training the affinity branch "
            "(and the instance branch, where the head has them), "
            f"{frozen} other parameter tensors frozen"
        )


PHASE_OPTION = "affinity_start_iter"
"""The named option (``wsod weak --affinity-start-iter``, a pipeline's ``weak`` key) that sets
the phase hook's ``start_iter``, wherever the hook stands in ``custom_hooks``."""


def phase_hook(cfg: Mapping) -> dict | None:
    """The ``WSODAffinityPhaseHook`` entry of a config's ``custom_hooks`` (found by type), or
    None when the config has no affinity phase."""
    hooks = cfg.get("custom_hooks") or []
    return next(
        (h for h in hooks if str(h.get("type", "")).endswith("WSODAffinityPhaseHook")), None
    )


def set_phase_start(cfg: Any, start_iter: int, config: object = "config") -> None:
    """Set the affinity phase's first iteration (the hook's ``start_iter``; in place).

    Raises:
        ValueError: ``config`` has no ``WSODAffinityPhaseHook`` (a one-phase black box), or a
            negative ``start_iter``.
    """
    hook = phase_hook(cfg)
    if hook is None:
        raise ValueError(
            f"{PHASE_OPTION}={start_iter}: {config} has no affinity phase (no "
            "WSODAffinityPhaseHook in custom_hooks); drop the option (max_iters alone sets "
            "a one-phase black box's schedule)"
        )
    if isinstance(start_iter, bool) or not isinstance(start_iter, int) or start_iter < 0:
        raise ValueError(f"{PHASE_OPTION}={start_iter!r}: want a whole number >= 0")
    hook["start_iter"] = int(start_iter)


def _reads_branch(refine: Mapping | None, scoring: Mapping | None) -> bool:
    """Whether detection reads a phase branch: the learned walk or the instance masks."""
    return (refine or {}).get("type") == "learned" or (scoring or {}).get("type") == "instances"


def _schedule_message(start_iter: int, max_iters: int, walks: bool) -> str:
    msg = (
        f"WSODAffinityPhaseHook: start_iter {start_iter} >= max_iters {max_iters}: the "
        "affinity branch is never trained"
    )
    if not walks:
        return msg
    at = max_iters * 4 // 5  # the committed configs give the branch the last fifth
    return (
        f"{msg}, and detection reads it (refine.type='learned' or scoring.type="
        f"'instances'). Give the branch the "
        f"last steps: a start below max_iters, e.g. --{PHASE_OPTION.replace('_', '-')} {at} "
        f"(in a pipeline file: weak = dict(max_iters={max_iters}, {PHASE_OPTION}={at}))"
    )


def schedule_error(cfg: Mapping) -> str | None:
    """Why a config's schedule cannot train its affinity phase (the hook's ``start_iter`` at or
    after ``train_cfg.max_iters`` while detection walks on the branch), or None when it can, has
    no phase, or does not walk on it. Reads the config only: nothing is built."""
    hook, loop = phase_hook(cfg), cfg.get("train_cfg") or {}
    if hook is None or loop.get("max_iters") is None:
        return None
    start, max_iters = int(hook.get("start_iter", 0)), int(loop["max_iters"])
    head = (cfg.get("model") or {}).get("roi_head") or {}
    if start < max_iters or not _reads_branch(head.get("refine"), head.get("scoring")):
        return None
    return _schedule_message(start, max_iters, True)
