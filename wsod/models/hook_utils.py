"""What wsod's hooks share: the runner's model without its wrapper, and a function applied to
every tensor of a hook's nested arguments or outputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from mmengine.model import is_model_wrapper

__all__ = ["bare_model", "map_tensors"]


def bare_model(runner) -> torch.nn.Module:
    """``runner.model`` without mmengine's model wrapper (e.g. distributed data parallel)."""
    model = runner.model
    return model.module if is_model_wrapper(model) else model


def map_tensors(fn: Callable[[torch.Tensor], torch.Tensor], value: Any) -> Any:
    """``value`` with ``fn`` applied to every tensor, nested in lists, tuples and dicts (the
    containers keep their types; other values stay as they are)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, list | tuple):
        return type(value)(map_tensors(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(fn, v) for k, v in value.items()}
    return value
