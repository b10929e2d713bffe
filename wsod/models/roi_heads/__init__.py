from .cam_head import WSODCAMHead, cam_box_scores
from .oicr_head import WSODOICRHead, oicr_pseudo_labels
from .wsddn_head import WSODWSDDNHead, nms_detections, wsddn_image_scores, wsddn_proposal_scores

__all__ = [
    "WSODCAMHead",
    "WSODOICRHead",
    "WSODWSDDNHead",
    "cam_box_scores",
    "nms_detections",
    "oicr_pseudo_labels",
    "wsddn_image_scores",
    "wsddn_proposal_scores",
]
