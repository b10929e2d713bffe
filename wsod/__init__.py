"""wsod: weakly supervised object detection on top of mmdetection 3.x.

Stages (each `wsod.stages.<name>.run`, a `wsod <name>` subcommand and a Make rule):
data -> proposals -> weak -> denoise -> strong -> evaluate -> report.
"""

from wsod.utils.quiet import filter_warnings

__version__ = "0.1.0"

filter_warnings()  # known-harmless library warnings, before mmengine is imported (see there)

VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)  # fmt: skip
