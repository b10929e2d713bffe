# The semi-supervised strong config on the synthetic demo dataset (five shape classes, 320x240
# images): the VOC soft-teacher config with the demo's classes, image size and the demo strong
# config's detector and schedule (configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py:
# no background weight), so that a comparison of the two on pipelines/demo.py
# (strong = dict(config=...)) differs only in the semi-supervised training.
_base_ = './soft-teacher_faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py'

# the demo's de-noise chain (top-1 per labelled class) leaves almost no image without a box, so
# every train image is also unlabelled: the teacher adds the objects one box per class missed
strong_inputs = dict(which='all')

classes = ('disc', 'square', 'triangle', 'ring', 'cross')
num_classes = len(classes)
model = dict(detector=dict(roi_head=dict(bbox_head=dict(
    num_classes=num_classes, loss_cls=dict(class_weight=None)))))  # mmdet's default loss

# demo images are 320x240: keep them at their own size (the student's view jitters around it)
scale = (320, 240)
sup_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='MultiBranch', branch_field=_base_.branch_field, sup=dict(type='PackDetInputs')),
]
weak_pipeline = [
    dict(type='Resize', scale=scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs', meta_keys=_base_.unsup_meta_keys),
]
strong_pipeline = [
    dict(type='RandomResize', scale=[(272, 204), (368, 276)], keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='RandAugment', aug_space=_base_.color_space, aug_num=1),
    dict(type='RandomErasing', n_patches=(1, 3), ratio=(0, 0.2)),
    dict(type='FilterAnnotations', min_gt_bbox_wh=(1e-2, 1e-2)),
    dict(type='PackDetInputs', meta_keys=_base_.unsup_meta_keys),
]
unsup_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadEmptyAnnotations'),
    dict(type='MultiBranch', branch_field=_base_.branch_field, unsup_teacher=weak_pipeline,
         unsup_student=strong_pipeline),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=scale, keep_ratio=True),
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
labeled_dataset = dict(_base_.labeled_dataset, data_root='data/demo/',
                       metainfo=dict(classes=classes), pipeline=sup_pipeline)
unlabeled_dataset = dict(_base_.unlabeled_dataset, data_root='data/demo/',
                         metainfo=dict(classes=classes), pipeline=unsup_pipeline)
train_dataloader = dict(dataset=dict(datasets=[labeled_dataset, unlabeled_dataset]))
test_dataloader = dict(
    dataset=dict(data_root='data/demo/', metainfo=dict(classes=classes), pipeline=test_pipeline))

max_iters = 300  # as the demo strong config: 1.5 epochs of 400 images at 2 per iteration
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=50),  # warm-up
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[240],
         gamma=0.1),  # x0.1 for the last 20 %
]
default_hooks = dict(checkpoint=dict(interval=100))

# The teacher is an exponential moving average of the student with weight `momentum` per
# iteration. mmdet's default 0.001 suits its long schedules (and this project's 5,000-iteration
# VOC config: 0.999^5000 leaves under 1 % of the initial weights); over the demo's 300
# iterations it would leave 0.999^300 = 74 % of the randomly initialised heads in the teacher,
# which then labels and detects almost nothing. 0.01 leaves 0.99^300 = 5 %.
burn_in_iters = 200  # two thirds of the schedule: the teacher starts from a detector near the plain one
custom_hooks = [
    dict(type='WSODFiniteLossHook', interval=1),
    dict(type='WSODBurnInHook', burn_in_iters=burn_in_iters, ramp_iters=0),
    dict(type='MeanTeacherHook', momentum=0.01),
]
