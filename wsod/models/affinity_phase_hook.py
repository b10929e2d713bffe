"""``WSODAffinityPhaseHook``: train the CAM head's affinity branch after the classifier.

IRN (Ahn, Cho & Kwak, CVPR 2019) trains its inter-pixel relations in a second step, from the
seeds of a finished CAM, with the classifier fixed. This hook makes that second step part of
the same training run: from iteration ``start_iter`` on, the ``WSODCAMHead`` returns the
affinity loss alone (``train_affinity``) and every parameter outside its ``affinity`` branch
stops taking gradients, so the classifier, and hence the seeds, stay what they were at
``start_iter``. Before it the branch is not run and costs nothing. ``start_iter=0`` with
``load_from`` a trained CAM checkpoint trains the branch alone.
"""

from __future__ import annotations

from mmdet.registry import HOOKS
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper


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
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        head = getattr(model, "roi_head", None)
        if getattr(head, "affinity", None) is None:
            raise TypeError(
                "WSODAffinityPhaseHook needs a weak detector whose roi_head has an affinity "
                f"branch (WSODCAMHead(affinity=...)), not {type(model).__name__} with "
                f"{type(head).__name__}"
            )
        return model

    def before_train(self, runner) -> None:
        """Refuse a schedule that ends before ``start_iter`` when detection walks on the branch
        (``refine.type='learned'``: it would train the classifier, then fail to detect);
        otherwise only warn."""
        model = self._model(runner)
        if self.start_iter < runner.max_iters:
            return
        msg = (
            f"WSODAffinityPhaseHook: start_iter {self.start_iter} >= max_iters "
            f"{runner.max_iters}: the affinity branch is never trained"
        )
        if (model.roi_head.refine or {}).get("type") != "learned":
            runner.logger.warning(msg)
            return
        at = runner.max_iters * 4 // 5  # the committed configs give the branch the last fifth
        key = f"custom_hooks.{self._index(runner)}.start_iter"
        raise ValueError(
            f"{msg}, and detection walks on it (refine.type='learned'). Give the branch the "
            f"last steps: a start_iter below max_iters, e.g. --cfg-options {key}={at} (in a "
            f"pipeline file: weak = dict(cfg_options={{'{key}': {at}}}))"
        )

    @staticmethod
    def _index(runner) -> str:
        """This hook's position in the config's ``custom_hooks`` ('N' when unknown)."""
        hooks = (getattr(runner, "cfg", None) or {}).get("custom_hooks") or []
        types = [str(h.get("type", "")) for h in hooks]
        return next((str(i) for i, t in enumerate(types) if t.endswith("AffinityPhaseHook")), "N")

    def before_train_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        model = self._model(runner)
        if runner.iter < self.start_iter or model.roi_head.train_affinity:
            return
        model.roi_head.train_affinity = True
        frozen = 0
        for name, p in model.named_parameters():
            if not name.startswith("roi_head.affinity."):
                frozen += p.requires_grad
                p.requires_grad_(False)
        runner.logger.info(
            f"WSODAffinityPhaseHook: iteration {runner.iter}: training the affinity branch, "
            f"{frozen} other parameter tensors frozen"
        )
