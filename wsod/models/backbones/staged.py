"""What the WSOD backbones share: stages frozen from the input side and BatchNorm in eval mode."""

from __future__ import annotations

from mmengine.model import BaseModule
from torch.nn.modules.batchnorm import _BatchNorm


class WSODStagedBackbone(BaseModule):
    """Base of a backbone with ``frozen_stages`` and ``norm_eval`` (as mmdet's ResNet).

    Subclasses set ``self.norm_eval`` and implement ``_freeze_stages()``; :meth:`train` re-freezes
    the frozen stages and keeps every BatchNorm in eval mode when ``norm_eval``.
    """

    norm_eval: bool = False

    def _freeze_stages(self) -> None:
        raise NotImplementedError

    def train(self, mode: bool = True):
        super().train(mode)
        self._freeze_stages()
        if mode and self.norm_eval:
            for m in self.modules():
                if isinstance(m, _BatchNorm):
                    m.eval()
        return self
