# WSDDN (no refinement) on ImageNet MobileNetV2 (CPU), 4000 steps x 2 images on VOC07 train.
# A baseline: the OICR config is the default black box (WSDDN alone picks object parts).
_base_ = [
    '../_base_/models/wsddn_mobilenetv2.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_4k.py',
    '../_base_/default_runtime.py',
]
default_hooks = dict(
    checkpoint=dict(by_epoch=False, interval=500, max_keep_ckpts=2),
    logger=dict(interval=20))
log_processor = dict(by_epoch=False)
