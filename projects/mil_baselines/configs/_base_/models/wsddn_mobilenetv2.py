# WSDDN (two-stream MIL head, no refinement) on torchvision's ImageNet MobileNetV2 (CPU).
# The backbone/RoI/head sizes are those of oicr_mobilenetv2.py (see the cost notes there).
# A WSDDN head alone tends to fire on the most discriminative object part; prefer OICR.
_base_ = './oicr_mobilenetv2.py'
model = dict(
    roi_head=dict(
        _delete_=True,
        type='WSODWSDDNHead',
        num_classes=20,
        bbox_roi_extractor=dict(
            type='SingleRoIExtractor',
            roi_layer=dict(type='RoIAlign', output_size=7, sampling_ratio=2),
            out_channels=96,
            featmap_strides=[16]),
        in_channels=96,
        roi_feat_size=7,
        fc_channels=(512, 512),
        dropout=0.5,
        test_cfg=dict(score_thr=1e-6, nms=dict(type='nms', iou_threshold=0.3), max_per_img=100)))
