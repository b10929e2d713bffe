# strong_cpu.py twice as long: 4 epochs of VOC07 train (5,000 iterations x 2 images). The
# 2-epoch run's losses were still falling (a noisy plateau at lr 0.005 that the x0.1 step
# broke), so the lr stays and the plateau is simply longer
# (docs/experiments/2026-12-03-strong-schedule-2-vs-4-epochs.md).
_base_ = './strong_cpu.py'

max_iters = 5000
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=200),  # warm-up
    # x0.1 for the last 20 % of the iterations
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[4000],
         gamma=0.1),
]
