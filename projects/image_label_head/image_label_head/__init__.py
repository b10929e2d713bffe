"""Image labels in the strong detector: ``WSODImageLabelRoIHead`` (issue 39, lever 4).

Registered into mmdet's ``MODELS`` when a config of ``projects/image_label_head/configs/``
imports this package (``custom_imports``).
"""

from .image_label_roi_head import WSODImageLabelRoIHead

__all__ = ["WSODImageLabelRoIHead"]
