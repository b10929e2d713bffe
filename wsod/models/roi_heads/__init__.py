from .cam_head import WSODCAMHead
from .cam_scoring import cam_box_scores
from .common import image_label_targets, nms_detections

__all__ = ["WSODCAMHead", "cam_box_scores", "image_label_targets", "nms_detections"]
