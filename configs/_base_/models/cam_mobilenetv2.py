# CAM black box: a multi-label classifier (ImageNet MobileNetV2 + 1x1 conv + global average
# pooling, BCE on image labels) whose class activation maps score the proposals at test time.
# The cheapest weak detector on CPU: no RoI pooling in training.
# Training reads no proposals (each image gets one whole-image box): `wsod weak` needs no
# --train-proposals and `make` trains it while the proposals are computed.
train_reads_proposals = False
model = dict(
    type='WSODWeakDetector',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_size_divisor=32),
    backbone=dict(
        type='WSODMobileNetV2',
        out_indices=(4, ),  # the 1280-channel features the ImageNet classifier reads ...
        dilate_last=True,  # ... at stride 16 (dilated last stage): 2x finer CAMs, ~1.9x cost
        frozen_stages=2,  # stages 0-2 frozen; stride-16 and last stages fine-tuned
        norm_eval=True,
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://mobilenet_v2')),
    roi_head=dict(
        type='WSODCAMHead',
        num_classes=20,
        in_channels=1280,
        featmap_stride=16,
        dropout=0.2,  # the dropout torchvision's MobileNetV2 classifier uses
        # a box's score: its share of the CAM's mass minus its share of the image's area
        scoring=dict(type='mass_minus_area', area_weight=1.0),
        upsample=2,  # score boxes on a CAM at 1/2 input resolution (8x the feature map)
        test_cfg=dict(score_thr=1e-3, nms=dict(type='nms', iou_threshold=0.3),
                      max_per_img=100)))
