# The pipeline's strong detector (cpu-4e-bg03: 4 epochs, background loss weight 0.3) on the
# black box's trunk, EfficientNet-Lite0, instead of MobileNetV2: the config to name with
# `backbone_from_black_box = 1` (`wsod strong --init-backbone`), whose backbone then starts from
# the CAM's trained Lite0 instead of ImageNet. Measured on the real boxes (the ceiling) in
# docs/experiments/2026-12-06-strong-ceiling.md (issue 39).
_base_ = './faster-rcnn_efficientnet-lite0_fpn_cpu-4e_voc07-pseudo_voc07-val.py'

num_classes = 20
background_weight = 0.3  # as in faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03 (why: its comment)
model = dict(roi_head=dict(bbox_head=dict(
    loss_cls=dict(class_weight=[1.0] * num_classes + [background_weight]))))
