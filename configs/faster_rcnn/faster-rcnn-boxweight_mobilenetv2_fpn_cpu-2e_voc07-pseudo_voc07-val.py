# The CPU MobileNetV2 Faster R-CNN where each pseudo box's `weight` (the de-noise stage's
# confidence; `score` when absent) scales the R-CNN classification loss of the RoIs assigned to
# it (wsod/models/strong/box_weight_*.py). Everything else as in the base config.
_base_ = './faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py'

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='WSODLoadBoxWeights'),  # gt_box_weights aligned with gt_bboxes
    dict(type='Resize', scale=(480, 320), keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='WSODPackDetInputs'),  # -> gt_instances.weights
]
train_dataloader = dict(dataset=dict(type='WSODPseudoCocoDataset', pipeline=train_pipeline))
model = dict(
    roi_head=dict(bbox_head=dict(type='WSODWeightedShared2FCBBoxHead')),
    train_cfg=dict(rcnn=dict(sampler=dict(type='WSODBoxWeightRandomSampler'))))
