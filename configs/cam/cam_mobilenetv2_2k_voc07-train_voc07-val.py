# CAM classifier on ImageNet MobileNetV2, 2000 steps x 2 images on VOC07 train (image labels
# only); proposals are scored by the class activation maps at inference. Half the schedule of
# the 4k config, the black box it was measured against.
_base_ = [
    '../_base_/models/cam_mobilenetv2.py',
    '../_base_/datasets/voc07_weak_cam.py',
    '../_base_/schedules/cam_sgd_4k.py',
    '../_base_/weak_runtime.py',
]
train_cfg = dict(max_iters=2000)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=100),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=2000, milestones=[1500], gamma=0.1),
]
