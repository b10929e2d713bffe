# OICR (WSDDN + 3 refinement branches) on torchvision's ImageNet MobileNetV2: the CPU config.
# Costs measured on this machine at 320x480 input: MobileNetV2 forward 0.04 s, forward+backward
# 0.26 s; mmcv RoIAlign on 2000 RoIs 0.29 s; a 2-layer 1024-wide head on 2000 RoIs 0.39 s
# forward+backward. Every number below trades some accuracy for CPU time.
model = dict(
    type='WSODWeakDetector',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        # torchvision ImageNet statistics, RGB (images load as BGR)
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_size_divisor=32),
    backbone=dict(
        type='WSODMobileNetV2',
        # stage 3 = stride 16, 96 channels: fine enough for RoIAlign, 13x cheaper to pool than
        # the 1280-channel stride-32 stage 4 (which is then never computed)
        out_indices=(3, ),
        # stages 0-2 (stride <= 8) frozen: backward stops at stride 16, about half the
        # backbone's backward cost; stage 3 is fine-tuned (a frozen backbone with a plain
        # WSDDN head collapsed onto small discriminative parts in trials)
        frozen_stages=2,
        norm_eval=True,  # batches of 2 images: keep ImageNet BatchNorm statistics
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://mobilenet_v2')),
    roi_head=dict(
        type='WSODOICRHead',
        num_classes=20,
        bbox_roi_extractor=dict(
            type='SingleRoIExtractor',
            # 7x7 bins, 2x2 samples each: the Fast R-CNN default
            roi_layer=dict(type='RoIAlign', output_size=7, sampling_ratio=2),
            out_channels=96,
            featmap_strides=[16]),
        in_channels=96,
        roi_feat_size=7,
        # 96*7*7 = 4704 -> 512 -> 512: half the width of the measured 1024 head, about a
        # quarter of its fc cost, still wide enough for 20 classes x 4 branches
        fc_channels=(512, 512),
        dropout=0.5,
        proposal_score_weight=0.0,  # WSDDN box-score scaling off: scores are proposal ranks
        num_refine=3,  # K = 3 refinement branches, as in the OICR paper
        iou_thr=0.5,  # pseudo-label IoU with the seed box (OICR)
        bg_iou_thr_lo=0.0,
        test_with_wsddn=False,  # inference = mean of the refinement branches (OICR)
        test_cfg=dict(
            score_thr=1e-4,
            nms=dict(type='nms', iou_threshold=0.3),  # per-class NMS at 0.3 (WSDDN/OICR)
            max_per_img=100)))
