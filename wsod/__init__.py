"""wsod: weakly supervised object detection on top of mmdetection 3.x.

Stages (each `wsod.stages.<name>.run`, a `wsod <name>` subcommand and a Make rule):
data -> proposals -> weak -> denoise -> strong -> rescore -> evaluate -> report, then predict.
"""

from wsod.utils.quiet import filter_warnings

__version__ = "0.1.0"

# the stages in pipeline order: the subcommands of `wsod`, the sections of a pipeline file
STAGES = (
    *("data", "proposals", "weak", "denoise", "strong", "rescore", "evaluate", "report"),
    "predict",  # the trained detector on new images (after the pipeline)
    "compare",  # a run's metrics beside the published headline (reproducibility check)
)
filter_warnings()  # known-harmless library warnings, before mmengine is imported (see there)

VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)  # fmt: skip
