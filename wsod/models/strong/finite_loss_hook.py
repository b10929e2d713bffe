"""``WSODFiniteLossHook``: stop training on a non-finite loss, naming the losses and the last
good checkpoint.

mmdet's ``CheckInvalidLossHook`` stops with a bare ``AssertionError``; this hook raises
:class:`NonFiniteLossError` whose message carries every loss term of the failing iteration, the
last checkpoint saved before it, and what to do. It runs before ``CheckpointHook`` (priority
``ABOVE_NORMAL`` vs ``VERY_LOW``), so the diverged weights are never written as a checkpoint and
a rerun resumes from the last good one.
"""

from __future__ import annotations

import math

from mmdet.registry import HOOKS
from mmengine.hooks import Hook
from mmengine.runner.checkpoint import find_latest_checkpoint


class NonFiniteLossError(FloatingPointError):
    """Training produced a NaN/inf loss; the message names the values and the checkpoint."""


def _as_float(v) -> float:
    try:
        return float(v.detach().float().mean()) if hasattr(v, "detach") else float(v)
    except (TypeError, ValueError):
        return float("nan")


@HOOKS.register_module()
class WSODFiniteLossHook(Hook):
    """Raise :class:`NonFiniteLossError` when any loss of a training iteration is NaN or inf.

    Args:
        interval: check every ``interval`` iterations (1 = every iteration; the check is cheap).
    """

    priority = "ABOVE_NORMAL"

    def __init__(self, interval: int = 1) -> None:
        self.interval = interval

    def after_train_iter(self, runner, batch_idx: int, data_batch=None, outputs=None) -> None:
        if not outputs or not self.every_n_train_iters(runner, self.interval):
            return
        values = {k: _as_float(v) for k, v in outputs.items() if "loss" in k}
        if all(math.isfinite(v) for v in values.values()):
            return
        ckpt = find_latest_checkpoint(runner.work_dir)
        losses = ", ".join(f"{k}={v:.4g}" for k, v in values.items())
        where = (
            f"the last good checkpoint is {ckpt}" if ckpt else "no checkpoint was saved before it"
        )
        raise NonFiniteLossError(
            f"non-finite loss at iteration {runner.iter + 1}: {losses}; training stopped and "
            f"{where}. Lower the learning rate (e.g. --cfg-options "
            f"optim_wrapper.optimizer.lr=...) or check the training boxes, then rerun the same "
            f"command to resume from the last checkpoint (work dir {runner.work_dir})."
        )
