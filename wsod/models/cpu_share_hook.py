"""``WSODCPUShareHook``: hold a CPU slot while a Runner runs and size PyTorch's intra-op
thread pool by the number of wsod jobs running at once (:mod:`wsod.utils.cpu_share`).

The training stages add it to every Runner when ``$WSOD_JOBS_DIR`` is set (the Makefile sets
it), so ``make -j2 all`` runs, e.g., the fully supervised reference beside the weak path with 1
thread each and returns to PyTorch's default as soon as one of them finishes. The thread count
is set from the main thread (OpenMP's setting is per calling thread) before the first and every
``interval``-th iteration of the train, val and test loops.
"""

from __future__ import annotations

from contextlib import ExitStack

from mmdet.registry import HOOKS
from mmengine.hooks import Hook

from wsod.utils import cpu_share


@HOOKS.register_module()
class WSODCPUShareHook(Hook):
    """Share the CPU cores with the other wsod jobs registered in ``$WSOD_JOBS_DIR``.

    Args:
        interval: re-count the live jobs every ``interval`` iterations (a folder listing).
        jobs_dir: the slot folder; None: ``$WSOD_JOBS_DIR`` (unset: the hook does nothing).
    """

    priority = "VERY_HIGH"

    def __init__(self, interval: int = 20, jobs_dir: str | None = None) -> None:
        self.interval = max(1, int(interval))
        self.jobs_dir = jobs_dir
        self._slot = ExitStack()  # holds the slot from before_run to after_run
        self._default: int | None = None

    def before_run(self, runner) -> None:
        import torch

        folder = cpu_share.jobs_dir(self.jobs_dir)
        if folder is None:
            return
        self._default = torch.get_num_threads()
        self._slot.enter_context(cpu_share.slot(folder))
        self._apply(runner)

    def after_run(self, runner) -> None:
        import torch

        self._slot.close()
        if self._default is not None:
            torch.set_num_threads(self._default)

    def _apply(self, runner) -> None:
        import torch

        if self._default is None:
            return
        want = cpu_share.fair_threads(self.jobs_dir, default=self._default)
        if want != torch.get_num_threads():
            torch.set_num_threads(want)
            runner.logger.info(
                f"CPU share: {cpu_share.live_jobs(self.jobs_dir)} wsod job(s) on "
                f"{cpu_share.cores()} cores; intra-op threads -> {want}"
            )

    def before_train_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        if runner.iter % self.interval == 0:
            self._apply(runner)

    def before_val_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        if batch_idx % self.interval == 0:
            self._apply(runner)

    def before_test_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        if batch_idx % self.interval == 0:
            self._apply(runner)
