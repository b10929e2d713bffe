"""``WSODChannelsLastHook``: a detector's convolutions in channels_last (NHWC) memory format.

oneDNN, PyTorch's CPU convolution backend, computes NHWC natively; on the default (NCHW) layout
PyTorch reorders every convolution's input and output around the kernel. A convolution whose
weight is channels_last runs in channels_last and returns channels_last, so converting the
model's weights once is enough: the images stay NCHW out of the data preprocessor and the first
convolution converts them.

One op must not see NHWC: mmcv's CPU ``roi_align`` reads its input's memory as NCHW without
checking the strides, so a channels_last feature map gives wrong RoI features without an error
(``projects/channels_last/tests/test_channels_last.py`` shows it). The hook hands every RoI
extractor contiguous (NCHW) features.

Measured on the strong detectors and not adopted: projects/channels_last/README.md.
"""

from __future__ import annotations

from typing import Any

import torch
from mmdet.registry import HOOKS
from mmengine.hooks import Hook

from wsod.models.hook_utils import bare_model, map_tensors

__all__ = ["WSODChannelsLastHook", "contiguous"]


def contiguous(value: Any) -> Any:
    """``value`` with every tensor in NCHW (contiguous) memory format (nested in lists, tuples
    and dicts; other values as they are)."""
    return map_tensors(torch.Tensor.contiguous, value)


@HOOKS.register_module()
class WSODChannelsLastHook(Hook):
    """Put the model's 4-d weights in channels_last before training, validation and detection
    (after the checkpoint is loaded), and give mmdet's RoI extractors NCHW features.

    A config names it in ``custom_hooks``; it changes which kernels compute, not the model:
    the weights keep their values and a checkpoint loads into either layout.
    """

    priority = "VERY_HIGH"

    def __init__(self) -> None:
        self.handles: list = []

    def before_run(self, runner) -> None:
        from mmdet.models.roi_heads.roi_extractors.base_roi_extractor import BaseRoIExtractor

        for module in bare_model(runner).modules():
            if isinstance(module, BaseRoIExtractor):
                self.handles.append(module.register_forward_pre_hook(_inputs_contiguous))

    def _convert(self, runner) -> None:
        bare_model(runner).to(memory_format=torch.channels_last)

    def before_train(self, runner) -> None:
        self._convert(runner)

    def before_val(self, runner) -> None:
        self._convert(runner)

    def before_test(self, runner) -> None:
        self._convert(runner)

    def after_run(self, runner) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


def _inputs_contiguous(module, args):
    return contiguous(args)
