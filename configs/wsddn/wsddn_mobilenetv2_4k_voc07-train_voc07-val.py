# WSDDN (no refinement) on ImageNet MobileNetV2 (CPU), 4000 steps x 2 images on VOC07 train.
# A baseline (WSDDN alone picks object parts; the CAM config is the default black box).
# Measured on VOC07 (seed 0, alone on the 2-core CPU, 38 min 45 s with detection on train and
# val, 2.9 GB): val mAP 0.2, train CorLoc 0.6; two thirds of its top boxes are object parts
# (median 0.26 % of the image; docs/results.md, "Other black boxes").
_base_ = [
    '../_base_/models/wsddn_mobilenetv2.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_4k.py',
    '../_base_/weak_runtime.py',
]
