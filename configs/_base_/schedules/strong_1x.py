# "1x" for the strong detector on a GPU, iteration-based so that an interrupted run resumes
# mid-schedule from the last checkpoint (the config sets default_hooks.checkpoint.interval).
# 12 epochs of VOC07 train (2,500 images) at 8 images per iteration: 12 * 2500 / 8 = 3750.
max_iters = 3750
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
val_cfg = None  # no validation loop (see the dataset config)
test_cfg = dict(type='TestLoop')

# lr 0.01 = mmdet's 0.02 at 16 images per iteration, scaled linearly to 8
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=0.0001))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=500),  # warm-up
    # x0.1 after epochs 8 and 11 of 12, as in mmdet's 1x schedule (2500 = 8 * 2500 / 8)
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[2500, 3438],
         gamma=0.1),
]
auto_scale_lr = dict(enable=False, base_batch_size=8)

