# The MobileNetV2 Faster R-CNN on the synthetic demo dataset (`wsod data --format demo`: five
# shape classes, 320x240 images, 400 train): a strong stage for a CPU in minutes (`make demo`
# times the whole pipeline; README, quick start).
_base_ = './faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py'

classes = ('disc', 'square', 'triangle', 'ring', 'cross')
model = dict(roi_head=dict(bbox_head=dict(num_classes=5)))

# demo images are 320x240: keep them at their own size
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=(320, 240), keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(320, 240), keep_ratio=True),
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
train_dataloader = dict(
    dataset=dict(data_root='data/demo/', metainfo=dict(classes=classes),
                 pipeline=train_pipeline))
test_dataloader = dict(
    dataset=dict(data_root='data/demo/', metainfo=dict(classes=classes), pipeline=test_pipeline))

max_iters = 300  # 1.5 epochs of 400 images at 2 per iteration
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=50),  # warm-up
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[240],
         gamma=0.1),  # x0.1 for the last 20 %
]
default_hooks = dict(checkpoint=dict(interval=100))  # ~2 min of training between checkpoints
