# CAM classifier on ImageNet MobileNetV2, 2000 steps x 2 images on VOC07 train (image labels
# only); proposals are scored by the class activation maps at inference.
_base_ = [
    '../_base_/models/cam_mobilenetv2.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_4k.py',
    '../_base_/weak_runtime.py',
]
# training ignores proposals: load a single one per image (the pipeline still carries them)
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=1),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='RandomChoiceResize', scales=[(1000, 320), (1000, 384), (1000, 448)],
             keep_ratio=True),
        dict(type='RandomFlip', prob=0.5)]),
    dict(type='WSODPackWeakInputs'),
]
# scoring proposals on a CAM costs a few ms: score all 2000 at test
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=2000, min_size=8),
    dict(type='ProposalBroadcaster',
         transforms=[dict(type='Resize', scale=(1000, 384), keep_ratio=True)]),
    dict(type='WSODPackWeakInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                    'image_labels')),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
# the classifier is new, the trunk is not: 10x lr on the head (0.1), 0.1x on the backbone
# (inherited from the schedule)
optim_wrapper = dict(paramwise_cfg=dict(custom_keys=dict(roi_head=dict(lr_mult=10.0))))
train_cfg = dict(max_iters=2000)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=100),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=2000, milestones=[1500], gamma=0.1),
]
