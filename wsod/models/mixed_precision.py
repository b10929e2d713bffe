"""Mixed precision (bf16 autocast) for training and detection, on CPUs with native bf16.

mmengine's ``AmpOptimWrapper`` refuses to run without CUDA/NPU/MLU/MUSA, and its ``GradScaler``
serves fp16; bf16 keeps fp32's exponent range and needs no loss scaling. Three pieces, which
:func:`wsod.training.config.set_precision` switches on together (``--precision``):

- :class:`WSODAmpOptimWrapper` (``optim_wrapper.type``): the training forward pass (data
  preprocessor + model) runs under mmengine's :func:`~mmengine.runner.amp.autocast` in
  ``dtype``; the backward pass, gradient clipping and the update are ``OptimWrapper``'s, on the
  fp32 weights.
- Detection: mmengine's own ``TestLoop(fp16=True)``, which enters the same autocast (bf16 on a
  CPU).
- :class:`WSODFp32IslandsHook`: mmcv's CPU ``nms`` reads ``float`` pointers and its CPU
  ``roi_align`` dispatches float/double/half only, so both refuse bf16 tensors. The hook casts
  back to fp32 the outputs of the heads whose predictions feed box decoding, NMS and the losses
  (mmdet's dense heads and RoI bbox heads) and gives RoI extractors fp32 features; convolutions
  and fc layers stay in bf16. Our own heads mark their fp32 methods with :func:`fp32_method`
  (the CAM head's test-time scoring).

What autocast does on a CPU: convolutions, linear layers and matrix products run in bf16
(AVX512_BF16 / AMX kernels through oneDNN), reductions and losses in fp32 (PyTorch's CPU
autocast op lists). On an AVX-512 CPU without AVX512_BF16 or AMX oneDNN emulates bf16, slower
than fp32: which precision ``auto`` picks is :mod:`wsod.training.precision`. Measured in
``benchmarks/bench_precision.py``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from mmdet.registry import HOOKS, OPTIM_WRAPPERS
from mmengine.hooks import Hook
from mmengine.optim import OptimWrapper

from .hook_utils import bare_model, map_tensors

__all__ = [
    "WSODAmpOptimWrapper",
    "WSODFp32IslandsHook",
    "add_fp32_islands",
    "detection_autocast",
    "fp32_method",
    "to_fp32",
]


def to_fp32(value: Any) -> Any:
    """``value`` with every floating tensor of lower precision cast to fp32 (nested in lists,
    tuples and dicts; other values as they are)."""
    return map_tensors(_tensor_to_fp32, value)


def _tensor_to_fp32(tensor: torch.Tensor) -> torch.Tensor:
    low = tensor.is_floating_point() and tensor.dtype in (torch.bfloat16, torch.float16)
    return tensor.float() if low else tensor


def fp32_method(method: Callable) -> Callable:
    """Decorate a module method to run in fp32 under autocast: its lower-precision tensor
    arguments are cast to fp32 and autocast is off inside (CPU and CUDA). For computations
    whose values must keep fp32's 24-bit mantissa, e.g. a head's test-time scores (bf16 keeps 8
    bits: scores near 0.5 fall on steps of 0.004 and tie) or iterated products (random
    walks)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with ExitStack() as stack:
            stack.enter_context(torch.autocast("cpu", enabled=False))
            if torch.cuda.is_available():
                stack.enter_context(torch.autocast("cuda", enabled=False))
            return method(self, *to_fp32(args), **to_fp32(kwargs))

    return wrapper


@OPTIM_WRAPPERS.register_module()
class WSODAmpOptimWrapper(OptimWrapper):
    """``OptimWrapper`` whose forward pass runs under autocast, on any device mmengine's
    ``autocast`` knows (a CPU: bf16 only).

    Args:
        dtype: the autocast type, ``'bfloat16'`` (no loss scaling: bf16 has fp32's range).
        **kwargs: ``OptimWrapper``'s (optimizer, clip_grad, accumulative_counts).
    """

    def __init__(self, dtype: str = "bfloat16", **kwargs: Any) -> None:
        if dtype != "bfloat16":
            raise ValueError(
                f"WSODAmpOptimWrapper: dtype {dtype!r} is not supported; it autocasts to "
                "'bfloat16' (fp16 needs loss scaling: use mmengine's AmpOptimWrapper on a GPU)"
            )
        super().__init__(**kwargs)
        self.cast_dtype = torch.bfloat16

    @contextmanager
    def optim_context(self, model: torch.nn.Module):
        """``OptimWrapper``'s context (gradient accumulation) + autocast for the forward."""
        from mmengine.runner.amp import autocast

        with super().optim_context(model), autocast(dtype=self.cast_dtype):
            yield


@HOOKS.register_module()
class WSODFp32IslandsHook(Hook):
    """Keep the parts of a detector whose ops take fp32 only in fp32 under autocast.

    At ``before_run`` (training and detection runners alike) it registers PyTorch module hooks:
    the outputs of every mmdet dense head and RoI bbox head, and of the modules named in
    ``outputs``, are cast to fp32; the inputs of every RoI extractor, and of the modules named in
    ``inputs``, likewise. Casting fp32 values is a no-op, so the hook changes nothing without
    autocast.

    Args:
        outputs: extra module names (``model.named_modules()``) whose outputs become fp32.
        inputs: extra module names whose inputs become fp32.
    """

    priority = "VERY_HIGH"

    def __init__(self, outputs: Sequence[str] = (), inputs: Sequence[str] = ()) -> None:
        self.outputs = tuple(outputs)
        self.inputs = tuple(inputs)
        self.handles: list = []

    def before_run(self, runner) -> None:
        self.handles += add_fp32_islands(bare_model(runner), self.outputs, self.inputs)

    def after_run(self, runner) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


def add_fp32_islands(
    model: torch.nn.Module, outputs: Sequence[str] = (), inputs: Sequence[str] = ()
) -> list:
    """Register on ``model`` the module hooks :class:`WSODFp32IslandsHook` registers (the
    modules of :func:`islands`); returns their handles (``.remove()`` undoes them). For
    detection outside a Runner (``wsod predict``)."""
    out_mods, in_mods = islands(model, outputs, inputs)
    handles = [mod.register_forward_hook(_outputs_to_fp32) for mod in out_mods]
    return handles + [mod.register_forward_pre_hook(_inputs_to_fp32) for mod in in_mods]


def detection_autocast(cfg: Any, model: torch.nn.Module) -> Callable[[], Any]:
    """The precision a config's test loop detects in, for detection outside a Runner
    (``wsod predict``): its ``fp16`` (bf16 autocast on a CPU, set by ``--precision``) with the
    fp32 islands of its ``WSODFp32IslandsHook`` registered on ``model``; returns the context
    each forward runs in (none in fp32)."""
    if not (cfg.get("test_cfg") or {}).get("fp16"):
        return contextlib.nullcontext
    from mmengine.runner.amp import autocast

    hooks = [h for h in cfg.get("custom_hooks") or [] if h.get("type") == "WSODFp32IslandsHook"]
    hook = hooks[0] if hooks else {}
    add_fp32_islands(model, hook.get("outputs", ()), hook.get("inputs", ()))
    return autocast


def _outputs_to_fp32(module, args, output):
    return to_fp32(output)


def _inputs_to_fp32(module, args):
    return to_fp32(args)


def islands(
    model: torch.nn.Module, outputs: Sequence[str] = (), inputs: Sequence[str] = ()
) -> tuple[list[torch.nn.Module], list[torch.nn.Module]]:
    """The modules whose outputs, and those whose inputs, :class:`WSODFp32IslandsHook` casts
    to fp32 in ``model``: mmdet's dense heads and bbox heads (outputs) and RoI extractors
    (inputs) by type, plus the named ones. Raises ``ValueError`` for a name ``model`` lacks."""
    from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
    from mmdet.models.roi_heads.bbox_heads import BBoxHead
    from mmdet.models.roi_heads.roi_extractors.base_roi_extractor import BaseRoIExtractor

    named = dict(model.named_modules())
    for name in (*outputs, *inputs):
        if name not in named:
            raise ValueError(
                f"WSODFp32IslandsHook: the model has no module {name!r} "
                f"(e.g. {', '.join(list(named)[1:6])})"
            )
    out_mods = [m for m in named.values() if isinstance(m, BaseDenseHead | BBoxHead)]
    out_mods += [named[n] for n in outputs if named[n] not in out_mods]
    in_mods = [m for m in named.values() if isinstance(m, BaseRoIExtractor)]
    in_mods += [named[n] for n in inputs if named[n] not in in_mods]
    return out_mods, in_mods
