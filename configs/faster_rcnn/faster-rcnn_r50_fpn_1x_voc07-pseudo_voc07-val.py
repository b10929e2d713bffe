# Faster R-CNN R50-FPN (mmdet's model, ImageNet ResNet-50) trained on VOC07 train pseudo labels,
# tested on the VOC07 val split: the standard configuration, for a GPU.
#   wsod strong --config configs/faster_rcnn/faster-rcnn_r50_fpn_1x_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong
_base_ = [
    'mmdet::_base_/models/faster-rcnn_r50_fpn.py',
    '../_base_/datasets/voc07_pseudo.py',
    '../_base_/schedules/strong_1x.py',
    '../_base_/default_runtime.py',
]
model = dict(roi_head=dict(bbox_head=dict(num_classes=20)))

# 8 images per iteration on one GPU (the schedule's lr is scaled for 8)
train_dataloader = dict(batch_size=8, num_workers=4)

default_hooks = dict(
    # iteration-based: a checkpoint every 500 iterations (and at the end), the last 3 kept
    checkpoint=dict(by_epoch=False, interval=500, max_keep_ckpts=3, save_last=True),
    logger=dict(interval=50))
log_processor = dict(window_size=50, by_epoch=False)

# stop on a NaN/inf loss naming the losses and the last good checkpoint
custom_hooks = [dict(type='WSODFiniteLossHook', interval=1)]
