# Faster R-CNN with an ImageNet MobileNetV2 + light FPN, trained on VOC07 train pseudo labels on
# a CPU, tested on the VOC07 val split. Designed for speed: frozen stride-2/4 stages, 128-channel
# FPN, 300/100 RPN proposals (train/test), 128 sampled RoIs, inputs at most 480x320, 2 epochs
# (val mAP: docs/experiments/2026-12-03-strong-schedule-2-vs-4-epochs.md).
#   wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \
#       --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json
_base_ = [
    '../_base_/models/faster-rcnn_mobilenetv2_fpn.py',
    '../_base_/datasets/voc07_pseudo.py',
    '../_base_/schedules/strong_cpu.py',
    '../_base_/default_runtime.py',
]

# at most 480x320 (VOC's 500x375 -> 427x320): ~1/4 of the pixels of mmdet's 1000x600
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=(480, 320), keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(480, 320), keep_ratio=True),
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
# 2 loader processes decode JPEGs while the model computes (2 images per iteration)
train_dataloader = dict(batch_size=2, num_workers=2, dataset=dict(pipeline=train_pipeline))
test_dataloader = dict(num_workers=2, dataset=dict(pipeline=test_pipeline))

default_hooks = dict(
    # iteration-based: a checkpoint every 250 iterations (a few minutes on a CPU, so little is
    # lost to an interruption) and at the end, the last 2 kept
    checkpoint=dict(by_epoch=False, interval=250, max_keep_ckpts=2, save_last=True),
    logger=dict(interval=20))
log_processor = dict(window_size=20, by_epoch=False)

# stop on a NaN/inf loss naming the losses and the last good checkpoint
custom_hooks = [dict(type='WSODFiniteLossHook', interval=1)]
