# WSDDN (no refinement) on ImageNet MobileNetV2 (CPU), 4000 steps x 2 images on VOC07 train.
# A baseline (WSDDN alone picks object parts; the CAM config is the default black box).
# On VOC07 most of its top boxes are object parts, at its full schedule too
# (docs/experiments/2026-12-03-other-black-boxes.md).
_base_ = [
    '../_base_/models/wsddn_mobilenetv2.py',
    '../../../../configs/_base_/datasets/voc07_weak.py',
    '../../../../configs/_base_/schedules/weak_sgd_4k.py',
    '../../../../configs/_base_/weak_runtime.py',
]
# this project's heads (WSODWSDDNHead, WSODOICRHead) into mmdet's MODELS
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.mil_baselines.mil_baselines'],
    allow_failed_imports=False)
