# weak_sgd_4k.py for the CAM black box: 4,000 steps x 2 images (3.2 epochs of VOC07 train), a
# 100-step warm-up and the lr step at 3,000. Why 4,000 and not 2,000:
# configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py.
_base_ = './weak_sgd_4k.py'

# the classifier is new, the trunk is not: 10x lr on the head (0.1), 0.1x on the backbone
# (weak_sgd_4k.py)
optim_wrapper = dict(paramwise_cfg=dict(custom_keys=dict(roi_head=dict(lr_mult=10.0))))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=100),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=4000, milestones=[3000], gamma=0.1),
]
