"""Modules of the strong stage (an mmdetection detector trained on pseudo labels)."""

from .box_weight_data import WSODLoadBoxWeights, WSODPackDetInputs, WSODPseudoCocoDataset  # noqa: F401
from .box_weight_head import WSODBoxWeightRandomSampler, WSODWeightedShared2FCBBoxHead  # noqa: F401
from .finite_loss_hook import NonFiniteLossError, WSODFiniteLossHook  # noqa: F401
from .image_label_roi_head import WSODImageLabelRoIHead  # noqa: F401
