# The CPU Faster R-CNN (MobileNetV2 + light FPN, <= 480x320) of the cpu-2e config, trained
# twice as long: 4 epochs of VOC07 train (5,000 iterations x 2 images; why: the schedule,
# _base_/schedules/strong_cpu_4e.py; its run-to-run spread:
# docs/experiments/2026-12-03-strong-seed-spread.md).
#   wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \
#       --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json
_base_ = [
    '../_base_/models/faster-rcnn_mobilenetv2_fpn.py',
    '../_base_/datasets/voc07_pseudo.py',
    '../_base_/schedules/strong_cpu_4e.py',  # 4 epochs
    '../_base_/strong_runtime.py',
]
