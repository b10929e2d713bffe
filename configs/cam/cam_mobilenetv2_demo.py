# CAM black box on ImageNet MobileNetV2 for the synthetic demo dataset (5 classes, 320x240
# images): 400 steps x 2 images = 2 epochs of the 400 training images, a few minutes on a CPU.
_base_ = [
    '../_base_/models/cam_mobilenetv2.py',
    '../_base_/datasets/demo_weak.py',
    '../_base_/schedules/weak_sgd_demo.py',
    '../_base_/weak_runtime.py',
]
# Test time: the CAM is refined by a random walk on the image's colours (WSODCAMHead refine) and
# a box scores by how well it holds the refined map's region above 0.5 x its maximum
# ('thresholded'). On the demo's uniformly coloured shapes this boxes whole single shapes where
# mass - area boxed the blur around them; chosen on the first half of demo val, VOC keeps mass -
# area (there the colour walk shrinks boxes onto parts): docs/experiments/2026-12-05-cam-refinement.md
model = dict(roi_head=dict(
    num_classes=5,
    scoring=dict(_delete_=True, type='thresholded', thr=0.5),
    refine=dict(type='colour', iters=10, dilations=(1, 2, 4, 8, 12, 24))))
# training ignores proposals: load a single one per image
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=1),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='RandomChoiceResize', scales=[(400, 208), (400, 240), (400, 272)],
             keep_ratio=True),
        dict(type='RandomFlip', prob=0.5)]),
    dict(type='WSODPackWeakInputs'),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
train_cfg = dict(max_iters=400)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=50),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=400, milestones=[300], gamma=0.1),
]
# new classifier, pretrained trunk: head lr x10 (the schedule sets the backbone to x0.1)
optim_wrapper = dict(paramwise_cfg=dict(custom_keys=dict(roi_head=dict(lr_mult=10.0))))
default_hooks = dict(checkpoint=dict(interval=200))
