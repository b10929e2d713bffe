# The 4k CAM black box (cam_mobilenetv2_4k_voc07-train_voc07-val.py: same data, schedule,
# training scales, head and test-time scoring) on Google's ImageNet EfficientNet-Lite0
# (timm's architecture, WSODEfficientNetLite) instead of torchvision's MobileNetV2. Only the
# trunk and its input normalisation change: the 4k config's bases and area weight, the trunk
# swapped below. The default black box adds its learned affinity phase
# (cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py, issue 31).
_base_ = [
    '../_base_/models/cam_mobilenetv2.py',
    '../_base_/datasets/voc07_weak_cam.py',
    '../_base_/schedules/cam_sgd_4k.py',
    '../_base_/weak_runtime.py',
]

model = dict(
    # these weights expect RGB in [-1, 1] (mean 0.5, std 0.5 of the 0-1 range: timm's
    # pretrained_cfg), not ImageNet's usual mean/std (see WSODEfficientNetLite's docstring)
    data_preprocessor=dict(mean=[127.5, 127.5, 127.5], std=[127.5, 127.5, 127.5]),
    backbone=dict(
        _delete_=True,
        type='WSODEfficientNetLite',
        arch='lite0',
        out_indices=(4, ),  # the 1280-channel features the ImageNet classifier reads ...
        dilate_last=True,  # ... at stride 16 (dilated last stage): 2x finer CAMs
        # stages 0-3 frozen (strides 2-16; MobileNetV2's config freezes to stride 8): Lite0 costs
        # 1.84x MobileNetV2 per step with 2 frozen, 1.53x with 3, which keeps the weak stage
        # near its time budget (docs/experiments/2026-12-05-efficientnet-lite-trunk.md)
        frozen_stages=3,
        norm_eval=True,
        init_cfg=dict(type='Pretrained', checkpoint='timm://tf_efficientnet_lite0')),
    # in_channels 1280 and featmap_stride 16 as MobileNetV2's; dropout 0.2 is also
    # EfficientNet-Lite0's own classifier's
    # the 4k config's area weight (a box may take in pixels down to 0.7 x the mean activation)
    roi_head=dict(in_channels=1280, featmap_stride=16, dropout=0.2,
                  scoring=dict(area_weight=0.7)))
