# Short schedule for the synthetic demo dataset: 600 steps of 2 images = 3 epochs of 400.
_base_ = './weak_sgd_4k.py'
train_cfg = dict(max_iters=600)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=50),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=600, milestones=[450], gamma=0.1),
]
