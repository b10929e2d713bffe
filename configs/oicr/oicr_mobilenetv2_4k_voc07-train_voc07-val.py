# OICR on ImageNet MobileNetV2, 4000 steps x 2 images on VOC07 train (image labels only),
# detections written for VOC07 val / train by the weak stage. The CPU default black box.
_base_ = [
    '../_base_/models/oicr_mobilenetv2.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_4k.py',
    '../_base_/weak_runtime.py',
]
