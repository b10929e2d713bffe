# The cpu-4e config, plus ignore regions: an anchor or proposal with more than half of its area
# inside an `iscrowd` box of the pseudo labels (the de-noise step `ignore_regions`: the black
# box's other confident boxes of the labelled classes) is neither a positive nor a negative,
# so objects without a pseudo box are not learnt as background. Without iscrowd boxes (real VOC
# boxes, no difficult flags in the shared copy) it trains exactly as cpu-4e.
# Measured with `ignore_regions(rel_score=0.5, max_overlap=0.3)` on the VOC07 CAM pseudo labels,
# not the default: docs/experiments/2026-12-03-ignore-regions.md.
#   wsod strong --config projects/ignore_regions/configs/faster-rcnn_mobilenetv2_fpn_cpu-4e-ignore_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \
#       --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json
_base_ = '../../../configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py'

model = dict(
    train_cfg=dict(
        rpn=dict(assigner=dict(ignore_iof_thr=0.5)),
        rcnn=dict(assigner=dict(ignore_iof_thr=0.5))))
