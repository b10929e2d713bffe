# The CPU Faster R-CNN of the cpu-4e config (light FPN, <= 480x320 inputs, 5,000 iterations x 2
# images) on Google's ImageNet EfficientNet-Lite0 (timm's architecture, WSODEfficientNetLite)
# instead of torchvision's MobileNetV2: only the trunk, its input normalisation and the FPN's
# input widths change. Not the pipeline's default (issue 31).
_base_ = './faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py'

model = dict(
    # these weights expect RGB in [-1, 1] (mean 0.5, std 0.5 of the 0-1 range: timm's
    # pretrained_cfg), not ImageNet's usual mean/std (see WSODEfficientNetLite's docstring)
    data_preprocessor=dict(mean=[127.5, 127.5, 127.5], std=[127.5, 127.5, 127.5]),
    backbone=dict(
        _delete_=True,
        type='WSODEfficientNetLite',
        arch='lite0',
        out_indices=(2, 3, 4),  # strides 8, 16, 32; channels 40, 112, 1280
        frozen_stages=1,  # strides 2 and 4 frozen, as in the MobileNetV2 config
        norm_eval=True,  # BatchNorm statistics stay ImageNet's (batches of 2 images)
        init_cfg=dict(type='Pretrained', checkpoint='timm://tf_efficientnet_lite0')),
    neck=dict(in_channels=[40, 112, 1280]))
