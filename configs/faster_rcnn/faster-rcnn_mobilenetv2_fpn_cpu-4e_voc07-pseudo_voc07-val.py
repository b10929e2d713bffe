# The CPU Faster R-CNN (MobileNetV2 + light FPN, <= 480x320) of the cpu-2e config, trained
# twice as long: 4 epochs of VOC07 train (5,000 iterations x 2 images). The 2-epoch run's
# losses were still falling (a noisy plateau at lr 0.005 that the x0.1 step broke), so the lr
# stays and the plateau is simply longer
# (docs/experiments/2026-12-03-strong-schedule-2-vs-4-epochs.md; its run-to-run spread:
# docs/experiments/2026-12-03-strong-seed-spread.md).
#   wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \
#       --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json
_base_ = './faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py'

max_iters = 5000
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=200),  # warm-up
    # x0.1 for the last 20 % of the iterations
    dict(type='MultiStepLR', by_epoch=False, begin=0, end=max_iters, milestones=[4000],
         gamma=0.1),
]
