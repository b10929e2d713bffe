"""torchvision's MobileNetV2 as an mmdet backbone, so torchvision's ImageNet weights load as is.

mmdet's own ``MobileNetV2`` names its layers differently from torchvision's checkpoint; this
wrapper keeps torchvision's module names (``features.N``) and exposes five stages by stride:

| stage | features[...] | stride | channels |
|-------|---------------|--------|----------|
| 0     | 0-1           | 2      | 16       |
| 1     | 2-3           | 4      | 24       |
| 2     | 4-6           | 8      | 32       |
| 3     | 7-13          | 16     | 96       |
| 4     | 14-18         | 32     | 1280     |

``dilate_last=True`` runs stage 4 at stride 16 (DeepLab style: its strided depthwise
convolution gets stride 1 and the later 3x3 convolutions dilation 2), so class activation maps
are twice as fine for about 1.9x the backbone cost; the ImageNet weights are unchanged.
"""

from __future__ import annotations

import torch.nn as nn
from mmdet.registry import MODELS

from wsod.models.backbones.staged import WSODStagedBackbone
from wsod.utils.weights import ensure_torchvision_checkpoint

_STAGE_ENDS = (2, 4, 7, 14, 19)  # exclusive end index in ``features`` of each stage
STAGE_CHANNELS = (16, 24, 32, 96, 1280)


@MODELS.register_module()
class WSODMobileNetV2(WSODStagedBackbone):
    """torchvision MobileNetV2 features with mmdet's backbone conventions.

    Args:
        out_indices: stages whose outputs are returned (see the module table).
        frozen_stages: stages ``0..frozen_stages`` get ``requires_grad=False`` and stay in eval
            mode (-1: none).
        norm_eval: keep every BatchNorm in eval mode while training (usual for small batches).
        dilate_last: run stage 4 at stride 16 with dilated convolutions (see the module doc).
        init_cfg: e.g. ``dict(type='Pretrained', checkpoint='torchvision://mobilenet_v2')``.
    """

    def __init__(
        self,
        out_indices=(3, 4),
        frozen_stages=-1,
        norm_eval=True,
        dilate_last=False,
        init_cfg=None,
    ):
        super().__init__(init_cfg=init_cfg)
        from torchvision.models import mobilenet_v2

        self.features = mobilenet_v2(weights=None).features
        if dilate_last:
            self._dilate_last_stage()
        self.out_indices = tuple(out_indices)
        self.frozen_stages = frozen_stages
        self.norm_eval = norm_eval
        self._freeze_stages()

    def init_weights(self):
        ckpt = (
            (self.init_cfg or {}).get("checkpoint", "") if isinstance(self.init_cfg, dict) else ""
        )
        if isinstance(ckpt, str) and ckpt.startswith("torchvision://"):
            ensure_torchvision_checkpoint(ckpt[len("torchvision://") :])
        super().init_weights()

    def _dilate_last_stage(self):
        strided_seen = False
        for i in range(_STAGE_ENDS[3], _STAGE_ENDS[4]):
            for m in self.features[i].modules():
                if not isinstance(m, nn.Conv2d) or m.kernel_size != (3, 3):
                    continue
                if m.stride == (2, 2):
                    m.stride = (1, 1)  # keeps dilation 1: its input is still at stride 16
                    strided_seen = True
                elif strided_seen:
                    m.dilation, m.padding = (2, 2), (2, 2)

    def _freeze_stages(self):
        if self.frozen_stages < 0:
            return
        for i in range(_STAGE_ENDS[self.frozen_stages]):
            m = self.features[i]
            m.eval()
            for p in m.parameters():
                p.requires_grad = False

    def forward(self, x):
        outs = []
        start = 0
        for stage, end in enumerate(_STAGE_ENDS):
            for i in range(start, end):
                x = self.features[i](x)
            start = end
            if stage in self.out_indices:
                outs.append(x)
            if stage >= max(self.out_indices):
                break
        return tuple(outs)
