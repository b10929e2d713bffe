# A short schedule for training the MobileNetV2 Faster R-CNN on a CPU (see the config using it).
# Iteration-based: an interrupted run resumes mid-way from the last checkpoint (the config sets
# default_hooks.checkpoint.interval).
# 2 epochs of VOC07 train (2,500 images) at 2 images per iteration. Too short for a good
# detector: twice as long (the cpu-4e config, 5,000 iterations) lifts both the strong detector
# and the reference trained on the real boxes
# (docs/experiments/2026-12-03-strong-schedule-2-vs-4-epochs.md).
max_iters = 2500
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
val_cfg = None  # no validation loop (see the dataset config)
test_cfg = dict(type='TestLoop')

# lr 0.005 at 2 images per iteration: twice mmdet's linear rule (0.02 * 2 / 16) because the
# schedule is short and the backbone's BatchNorm is frozen
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.005, momentum=0.9, weight_decay=0.0001),
    clip_grad=dict(max_norm=10, norm_type=2))  # noisy pseudo boxes: guard against spikes
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=200),  # warm-up
    # x0.1 for the last 20 % of the iterations
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[2000],
         gamma=0.1),
]
auto_scale_lr = dict(enable=False, base_batch_size=2)

