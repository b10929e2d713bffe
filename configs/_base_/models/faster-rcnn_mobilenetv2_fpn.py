# Faster R-CNN with torchvision's ImageNet MobileNetV2 (WSODMobileNetV2) and a light FPN,
# built for CPU training: see configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-*.py.
_base_ = 'mmdet::_base_/models/faster-rcnn_r50_fpn.py'

model = dict(
    backbone=dict(
        _delete_=True,
        type='WSODMobileNetV2',
        out_indices=(2, 3, 4),  # strides 8, 16, 32; channels 32, 96, 1280
        # stages 0-1 (stride 2 and 4) frozen: generic edges, and no backward at full resolution
        frozen_stages=1,
        norm_eval=True,  # BatchNorm statistics stay ImageNet's (batches of 2 images)
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://mobilenet_v2')),
    neck=dict(
        in_channels=[32, 96, 1280],
        out_channels=128,  # half of mmdet's 256: the RoI head's first fc is 4x cheaper
        num_outs=4),  # strides 8, 16, 32 + a max-pooled stride-64 level for the RPN
    rpn_head=dict(
        in_channels=128,
        feat_channels=128,
        # anchors 32..256 px (scale 4 x stride 8..64): objects in <= 480x320 inputs
        anchor_generator=dict(scales=[4], ratios=[0.5, 1.0, 2.0], strides=[8, 16, 32, 64])),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=128, featmap_strides=[8, 16, 32]),
        bbox_head=dict(in_channels=128, fc_out_channels=1024, num_classes=20)),
    train_cfg=dict(
        # 300 proposals per image (mmdet: 1000): few objects per VOC image, RoI cost is linear
        rpn_proposal=dict(nms_pre=1000, max_per_img=300),
        # 128 sampled RoIs (mmdet: 512), still 25 % positives
        rcnn=dict(sampler=dict(num=128))),
    test_cfg=dict(
        rpn=dict(nms_pre=500, max_per_img=100),  # 100 proposals at test time (mmdet: 1000)
        rcnn=dict(score_thr=0.05, max_per_img=100)))
