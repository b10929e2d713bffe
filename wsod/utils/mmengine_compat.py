"""Make mmengine 0.10 checkpoints resumable under torch >= 2.6.

torch 2.6 made ``torch.load(weights_only=True)`` the default. mmengine's checkpoints carry the
message hub's ``HistoryBuffer`` logs (numpy arrays and scalars; its statistic methods pickled as
``getattr(HistoryBuffer, 'mean')``), which that loader refuses, so ``resume=True`` fails.

Rather than turning ``weights_only`` off, we allow-list exactly the globals mmengine checkpoints
need (found with ``torch.serialization.get_unsafe_globals_in_checkpoint``). ``builtins.getattr``
is among them; it is contained: the weights-only unpickler still refuses to *call* anything it
returns unless that too is allow-listed, so it can only fetch attributes of allow-listed objects.
"""

from __future__ import annotations

import builtins

_DONE = False


def mmengine_safe_globals() -> list:
    """The globals an mmengine training checkpoint needs beyond torch's default allow-list."""
    import numpy as np
    from mmengine.logging.history_buffer import HistoryBuffer

    dtype_classes = [
        type(np.dtype(t))
        for t in (
            "float64",
            "float32",
            "float16",
            "int64",
            "int32",
            "int16",
            "int8",
            "uint8",
            "bool",
        )
    ]
    return [
        HistoryBuffer,
        builtins.getattr,
        np.ndarray,
        np.dtype,
        np._core.multiarray._reconstruct,
        np._core.multiarray.scalar,
        *dtype_classes,
    ]


def enable_safe_resume() -> None:
    """Allow-list mmengine's checkpoint globals for ``torch.load(weights_only=True)``. Idempotent."""
    global _DONE
    if _DONE:
        return
    import torch

    torch.serialization.add_safe_globals(mmengine_safe_globals())
    _DONE = True
