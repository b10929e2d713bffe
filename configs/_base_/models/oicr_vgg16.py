# OICR on ImageNet VGG16 (the paper's setting, for GPUs): conv5_3 (stride 16, 512 channels),
# 7x7 RoIAlign, fc6/fc7 (4096) initialised from torchvision's VGG16 classifier.
_base_ = './oicr_mobilenetv2.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='WSODVGG16',
        frozen_stages=1,  # conv1-conv2 frozen, as in Fast R-CNN / OICR
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://vgg16')),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=512),
        in_channels=512,
        fc_channels=(4096, 4096),
        pretrained_fcs='torchvision://vgg16'))
