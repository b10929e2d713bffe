# WSDDN on ImageNet VGG16 (the paper's VGG16 "L" model, for GPUs).
_base_ = './wsddn_mobilenetv2.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='WSODVGG16',
        frozen_stages=1,  # conv1-conv2 frozen, as in Fast R-CNN / WSDDN
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://vgg16')),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=512),
        in_channels=512,
        fc_channels=(4096, 4096),
        pretrained_fcs='torchvision://vgg16'))
