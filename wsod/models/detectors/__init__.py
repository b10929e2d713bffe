from .weak_detector import WSODWeakDetector

__all__ = ["WSODWeakDetector"]
