# Faster R-CNN with an ImageNet MobileNetV2 + light FPN, trained on VOC07 train pseudo labels on
# a CPU, tested on the VOC07 val split. Designed for speed: frozen stride-2/4 stages, 128-channel
# FPN, 300/100 RPN proposals (train/test), 128 sampled RoIs, inputs at most 480x320, 2 epochs
# (val mAP: docs/experiments/2026-12-03-strong-schedule-2-vs-4-epochs.md).
#   wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \
#       --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json
_base_ = [
    '../_base_/models/faster-rcnn_mobilenetv2_fpn.py',
    '../_base_/datasets/voc07_pseudo.py',  # <= 480x320, 2 images per iteration
    '../_base_/schedules/strong_cpu.py',  # 2 epochs
    '../_base_/strong_runtime.py',  # a checkpoint every 250 iterations
]
