# OICR on ImageNet MobileNetV2, 4000 steps x 2 images on VOC07 train (image labels only),
# detections written for VOC07 val / train by the weak stage. On VOC07 it collapses onto object
# parts like WSDDN, so the CAM config is the default black box
# (docs/experiments/2026-12-03-other-black-boxes.md).
_base_ = [
    '../_base_/models/oicr_mobilenetv2.py',
    '../../../../configs/_base_/datasets/voc07_weak.py',
    '../../../../configs/_base_/schedules/weak_sgd_4k.py',
    '../../../../configs/_base_/weak_runtime.py',
]
# this project's heads (WSODWSDDNHead, WSODOICRHead) into mmdet's MODELS
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.mil_baselines.mil_baselines'],
    allow_failed_imports=False)
