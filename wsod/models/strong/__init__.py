"""Modules of the strong stage (an mmdetection detector trained on pseudo labels)."""

from .finite_loss_hook import NonFiniteLossError, WSODFiniteLossHook  # noqa: F401
from .roi_drop_bbox_head import WSODRoIDropBBoxHead  # noqa: F401
