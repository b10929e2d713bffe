"""torchvision's VGG16 convolutions as an mmdet backbone (the WSDDN/OICR GPU backbone).

Keeps torchvision's module names (``features.N``) so ``torchvision://vgg16`` loads as is. The
last max-pool is dropped, as in Fast R-CNN, WSDDN and OICR: the output is conv5_3 (after ReLU),
stride 16, 512 channels. Stages (conv blocks):

| stage | features[...] | stride of its output |
|-------|---------------|----------------------|
| 0     | 0-4 (conv1)   | 2 (after pool1)      |
| 1     | 5-9 (conv2)   | 4                    |
| 2     | 10-16 (conv3) | 8                    |
| 3     | 17-23 (conv4) | 16                   |
| 4     | 24-29 (conv5) | 16 (no pool5)        |
"""

from __future__ import annotations

import torch.nn as nn
from mmdet.registry import MODELS
from mmengine.model import BaseModule

_STAGE_ENDS = (5, 10, 17, 24, 30)


@MODELS.register_module()
class WSODVGG16(BaseModule):
    """VGG16 conv1_1..conv5_3 (stride 16, 512 channels).

    Args:
        frozen_stages: stages ``0..frozen_stages`` are not trained (-1: none; Fast R-CNN
            freezes conv1-conv2, i.e. 1).
        init_cfg: e.g. ``dict(type='Pretrained', checkpoint='torchvision://vgg16')``.
    """

    def __init__(self, frozen_stages: int = 1, init_cfg: dict | None = None) -> None:
        super().__init__(init_cfg=init_cfg)
        from torchvision.models import vgg16

        self.features = nn.Sequential(*list(vgg16(weights=None).features)[: _STAGE_ENDS[-1]])
        self.frozen_stages = frozen_stages
        self._freeze()

    def _freeze(self) -> None:
        if self.frozen_stages < 0:
            return
        for m in list(self.features)[: _STAGE_ENDS[self.frozen_stages]]:
            for p in m.parameters():
                p.requires_grad = False

    def forward(self, x):
        return (self.features(x),)
