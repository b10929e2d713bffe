from .tv_mobilenet_v2 import WSODMobileNetV2

__all__ = ["WSODMobileNetV2"]
