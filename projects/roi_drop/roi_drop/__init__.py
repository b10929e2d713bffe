"""RoI drop in the strong detector: ``WSODRoIDropBBoxHead`` (issue 39, lever 5).

Registered into mmdet's ``MODELS`` when a config of ``projects/roi_drop/configs/`` imports this
package (``custom_imports``).
"""

from .roi_drop_bbox_head import WSODRoIDropBBoxHead

__all__ = ["WSODRoIDropBBoxHead"]
