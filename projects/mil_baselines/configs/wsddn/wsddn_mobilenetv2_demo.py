# WSDDN on ImageNet MobileNetV2 for the synthetic demo dataset (5 classes, 320x240 images,
# 600 steps x 2 images): a baseline for the OICR and CAM demo configs.
_base_ = [
    '../_base_/models/wsddn_mobilenetv2.py',
    '../../../../configs/_base_/datasets/demo_weak.py',
    '../../../../configs/_base_/schedules/weak_sgd_demo.py',
    '../../../../configs/_base_/weak_runtime.py',
]
# this project's heads (WSODWSDDNHead, WSODOICRHead) into mmdet's MODELS
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.mil_baselines.mil_baselines'],
    allow_failed_imports=False)
model = dict(roi_head=dict(num_classes=5))
default_hooks = dict(checkpoint=dict(interval=200))
