from .timm_efficientnet_lite import WSODEfficientNetLite
from .tv_mobilenet_v2 import WSODMobileNetV2

__all__ = ["WSODEfficientNetLite", "WSODMobileNetV2"]
