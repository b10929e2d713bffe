"""The MIL baselines: WSDDN (Bilen & Vedaldi, 2016) and OICR (Tang et al., 2017) heads.

Registered into mmdet's ``MODELS`` when a config of ``projects/mil_baselines/configs/`` imports
this package (``custom_imports``); they run inside the core's ``WSODWeakDetector`` and the weak
stage (proposals in, COCO detections out), like the CAM head.
"""

from .oicr_head import WSODOICRHead, oicr_pseudo_labels
from .wsddn_head import WSODWSDDNHead, wsddn_image_scores, wsddn_proposal_scores

__all__ = [
    "WSODOICRHead",
    "WSODWSDDNHead",
    "oicr_pseudo_labels",
    "wsddn_image_scores",
    "wsddn_proposal_scores",
]
