# Iteration-based SGD schedule for the CPU weak detector: 4000 steps of 2 images = 3.2 epochs
# of VOC07 train (2500 images). Training time on a 2-core CPU: docs/results.md (headline run).
train_cfg = dict(type='IterBasedTrainLoop', max_iters=4000, val_interval=10**9)
val_cfg = None  # no in-training validation (see the dataset config)
test_cfg = dict(type='TestLoop')

optim_wrapper = dict(
    type='OptimWrapper',
    # lr 0.01 for batch 2 with a fresh head on a pretrained trunk; wd 5e-4 as WSDDN/OICR
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=5e-4),
    # the pretrained trunk at 0.1x: at the full lr with 2 images per step the fine-tuned
    # MobileNetV2 stages collapsed within ~100 steps (their features became the same for every
    # image: std across images 1e-5, the loss stuck at the label prior; measured on VOC07 train)
    paramwise_cfg=dict(custom_keys=dict(backbone=dict(lr_mult=0.1))),
    clip_grad=dict(max_norm=10.0, norm_type=2))  # refinement losses can spike early
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=200),  # warm-up
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=4000, milestones=[3000], gamma=0.1),
]
auto_scale_lr = dict(enable=False, base_batch_size=2)
