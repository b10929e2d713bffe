"""``WSODBurnInHook``: supervised burn-in before the semi-supervised phase of a Soft Teacher.

A teacher that starts from random heads never becomes confident enough to mine a box when its
unlabelled images teach background from the first iteration on: on the demo the Soft Teacher
without burn-in never produced a pseudo box above ``pseudo_label_initial_score_thr`` and ended
far below the plain detector (docs/experiments/2026-12-05-semi-supervised-strong.md). The usual
remedy (Unbiased Teacher, Liu et al. 2021; SoS-WSOD's pseudo-fully-supervised stage) is a
burn-in: the student learns from the labelled images alone for ``burn_in_iters`` iterations
(the unlabelled branch is skipped, so these iterations cost what the plain detector's do), then
the teacher becomes an exact copy of the student and the unlabelled loss is switched on,
optionally ramped linearly over ``ramp_iters`` iterations up to the config's ``unsup_weight``.
From then on mmdet's ``MeanTeacherHook`` keeps the teacher an exponential moving average.
"""

from __future__ import annotations

from mmdet.registry import HOOKS
from mmengine.hooks import Hook

from wsod.models.hook_utils import bare_model


def unsup_weight_at(iteration: int, weight: float, burn_in_iters: int, ramp_iters: int) -> float:
    """The unlabelled loss weight at a 0-based training iteration: 0 during the burn-in, then a
    linear ramp over ``ramp_iters`` iterations up to ``weight`` (at once when 0)."""
    if iteration < burn_in_iters:
        return 0.0
    if ramp_iters <= 0:
        return float(weight)
    return float(weight) * min(1.0, (iteration - burn_in_iters + 1) / ramp_iters)


@HOOKS.register_module()
class WSODBurnInHook(Hook):
    """Skip the unlabelled branch for ``burn_in_iters`` iterations, then copy the student into the
    teacher and ramp the unlabelled loss weight up to the config's ``unsup_weight``.

    Args:
        burn_in_iters: supervised iterations first (0: no burn-in).
        ramp_iters: iterations over which the unlabelled weight grows linearly after the burn-in
            (0: at once).

    The model must be a semi-supervised detector with ``student``, ``teacher`` and
    ``semi_train_cfg.unsup_weight`` (``WSODLabelRestrictedSoftTeacher`` skips its teacher pass
    while the weight is 0). Resuming anywhere gives the same weights per iteration; the copy
    happens once, at iteration ``burn_in_iters``, and the teacher's state is in the checkpoints.
    """

    priority = "NORMAL"

    def __init__(self, burn_in_iters: int, ramp_iters: int = 0) -> None:
        if burn_in_iters < 0 or ramp_iters < 0:
            raise ValueError(
                f"WSODBurnInHook: burn_in_iters ({burn_in_iters}) and ramp_iters ({ramp_iters}) "
                "must be >= 0"
            )
        self.burn_in_iters = int(burn_in_iters)
        self.ramp_iters = int(ramp_iters)
        self._weight: float | None = None

    @staticmethod
    def _model(runner):
        model = bare_model(runner)
        for name in ("student", "teacher", "semi_train_cfg"):
            if not hasattr(model, name):
                raise TypeError(
                    f"WSODBurnInHook needs a semi-supervised detector with '{name}' "
                    f"(e.g. WSODLabelRestrictedSoftTeacher), not {type(model).__name__}"
                )
        return model

    def before_train(self, runner) -> None:
        model = self._model(runner)
        self._weight = float(model.semi_train_cfg.get("unsup_weight", 1.0))
        if self.burn_in_iters >= runner.max_iters:
            runner.logger.warning(
                f"WSODBurnInHook: burn_in_iters {self.burn_in_iters} >= max_iters "
                f"{runner.max_iters}: the unlabelled images are never used"
            )

    def before_train_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        model = self._model(runner)
        if runner.iter == self.burn_in_iters and self.burn_in_iters > 0:
            model.teacher.load_state_dict(model.student.state_dict())
            runner.logger.info(
                f"burn-in over at iteration {runner.iter}: teacher = student, unlabelled images on"
            )
        weight = unsup_weight_at(runner.iter, self._weight, self.burn_in_iters, self.ramp_iters)
        model.semi_train_cfg.unsup_weight = weight
        runner.message_hub.update_scalar("train/unsup_weight", weight)
