# OICR on ImageNet MobileNetV2, 4000 steps x 2 images on VOC07 train (image labels only),
# detections written for VOC07 val / train by the weak stage. Measured on VOC07 (seed 0, 2-core
# CPU, 1 h 1 min with detection, 2.6 GB): val mAP 0.2, train CorLoc 1.0: like WSDDN it collapses
# onto object parts, so the CAM config is the default black box (docs/results.md, "Other black boxes").
_base_ = [
    '../_base_/models/oicr_mobilenetv2.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_4k.py',
    '../_base_/weak_runtime.py',
]
