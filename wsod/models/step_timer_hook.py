"""Seconds per training iteration and per detected image, in the run's provenance.

``WSODStepTimerHook`` (added to every Runner of the training flow, after the fingerprint was
taken: :func:`wsod.training.config.add_step_timer_hook`) times each training iteration and each
test batch and notes the timings for the sidecars this process writes next
(:func:`wsod.utils.io.note_in_provenance`): ``train_steps`` in the model record's
``.meta.json``, ``test_steps`` in the detections'. The run-time estimate
(:mod:`wsod.report.estimate`) reads them from a quick look's sidecars: a stage's time is its
start-up (the wall time not spent in steps) plus its steps.

Each record holds the count, the total and the median seconds, and the first
:data:`KEPT_STEPS` step times themselves (a two-phase schedule's phases are told apart by them).
"""

from __future__ import annotations

import statistics
import time

from mmdet.registry import HOOKS
from mmengine.hooks import Hook

from wsod.utils.io import note_in_provenance

KEPT_STEPS = 200
"""Step times kept one by one (a quick look's are all kept; a full run's first ones)."""


def summary(seconds: list[float], units: list[int] | None = None) -> dict:
    """``{"steps", "total_s", "median_s", "seconds"[, "units"]}`` of step durations (``units``:
    images per step, for detection)."""
    out = {
        "steps": len(seconds),
        "total_s": round(sum(seconds), 3),
        "median_s": round(statistics.median(seconds), 4) if seconds else None,
        "seconds": [round(s, 4) for s in seconds[:KEPT_STEPS]],
    }
    if units is not None:
        out["units"] = sum(units)
    return out


@HOOKS.register_module()
class WSODStepTimerHook(Hook):
    """Time training iterations and test batches (see the module docstring)."""

    priority = "VERY_LOW"

    def __init__(self) -> None:
        self._start = None
        self.train_s: list[float] = []
        self.test_s: list[float] = []
        self.test_units: list[int] = []

    def before_run(self, runner) -> None:  # another Runner's steps are not this one's
        note_in_provenance("train_steps", None)
        note_in_provenance("test_steps", None)

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self._start = time.perf_counter()

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if self._start is not None:
            self.train_s.append(time.perf_counter() - self._start)

    def after_train(self, runner) -> None:  # before the stage writes its model record
        note_in_provenance("train_steps", summary(self.train_s))

    def before_test_iter(self, runner, batch_idx, data_batch=None) -> None:
        self._start = time.perf_counter()

    def after_test_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if self._start is None:
            return
        self.test_s.append(time.perf_counter() - self._start)
        self.test_units.append(len(outputs) if outputs is not None else 1)
        # noted at the last batch, not per epoch: the evaluator writes the detections before
        # the test loop's after_test_epoch hooks run
        if batch_idx + 1 >= len(runner.test_loop.dataloader):
            note_in_provenance("test_steps", summary(self.test_s, self.test_units))
