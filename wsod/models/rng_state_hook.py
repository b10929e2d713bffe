"""``WSODRNGStateHook``: a resumed run draws the random numbers the interrupted run would have.

mmengine's checkpoint holds the model, the optimizer, the schedulers and the iteration; on
resume it re-seeds and replays the data loader up to that iteration, so the data order continues
where it was. The random draws of the training itself are not replayed: the model's (dropout, RPN
and RoI sampling: PyTorch's generator) and any NumPy draw outside the data pipeline. Without this
hook a resumed run trains on other dropout masks and other sampled boxes than an uninterrupted
one, and ends elsewhere (a test in tests/stages/test_determinism.py compares the two).

The hook stores the generator states (PyTorch CPU and CUDA, NumPy, Python's ``random``) in every
checkpoint it saves (``checkpoint['wsod_rng_state']``), the states the run continues from. On a
resume it sets them back after the loop's replay of the data loader, right before the first
batch after the resumed iteration is loaded: where the interrupted run had them. A checkpoint
without that entry (older runs) or loaded with ``load_from`` only (another run's weights) leaves
the generators alone. Data-loader worker processes keep their own generators, replayed by the
loop as before.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from mmdet.registry import HOOKS
from mmengine.hooks import Hook

KEY = "wsod_rng_state"


def rng_state() -> dict[str, Any]:
    """The generators' states, as tensors, ints and lists (a weights-only checkpoint loads them)."""
    import torch

    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": [
            name,
            torch.from_numpy(keys.astype(np.int64)),
            int(pos),
            int(has_gauss),
            float(gauss),
        ],  # fmt: skip
        "random": [version, list(internal), gauss_next],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Set the generators to a :func:`rng_state`."""
    import torch

    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = state["random"]
    random.setstate((version, tuple(internal), gauss_next))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class _RestoreAfterReplay:
    """The loop's data iterator; calls ``restore`` before fetching batch ``replayed + 1``."""

    def __init__(self, inner: Iterator, replayed: int, restore: Callable[[], None]) -> None:
        self._inner, self._left, self._restore = inner, replayed, restore

    def __iter__(self) -> _RestoreAfterReplay:
        return self

    def __next__(self) -> Any:
        if self._left == 0 and self._restore is not None:
            self._restore()
            self._restore = None
        self._left -= 1
        return next(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@HOOKS.register_module()
class WSODRNGStateHook(Hook):
    """Save the generators' states in checkpoints and restore them on resume."""

    priority = "VERY_LOW"

    def __init__(self) -> None:
        self._pending: dict[str, Any] | None = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint[KEY] = rng_state()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get(KEY)
        saved_iter = (checkpoint.get("meta") or {}).get("iter")
        self._pending = None if state is None else {"state": state, "iter": saved_iter}

    def before_train(self, runner) -> None:
        pending, self._pending = self._pending, None
        loop = runner.train_loop
        # a resume continues at the checkpoint's iteration; load_from alone starts at 0
        if pending is None or pending["iter"] != runner.iter or runner.iter == 0:
            return
        if not hasattr(loop, "dataloader_iterator"):
            return  # an epoch-based loop: nothing replayed, nothing to time the restore by
        state = pending["state"]
        loop.dataloader_iterator = _RestoreAfterReplay(
            loop.dataloader_iterator, runner.iter, lambda: set_rng_state(state)
        )
