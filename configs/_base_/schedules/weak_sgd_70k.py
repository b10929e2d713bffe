# The OICR paper's schedule (GPU, VGG16): 70k steps of 2 images, lr 1e-3 then 1e-4 after 40k.
_base_ = './weak_sgd_4k.py'
train_cfg = dict(max_iters=70000)
optim_wrapper = dict(optimizer=dict(lr=0.001))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=500),
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=70000, milestones=[40000], gamma=0.1),
]
auto_scale_lr = dict(enable=True, base_batch_size=2)  # --auto-scale-lr with more GPUs
