# The VOC 2007 CPU pipeline with the strong detector (and the reference) on the black box's own
# trunk, EfficientNet-Lite0, started from the black box's trained weights instead of ImageNet
# (issue 39, lever 1: docs/experiments/2026-12-06-strong-ceiling.md). Its baseline is the same
# file with backbone_from_black_box = 0 (Lite0 from ImageNet). Measured with one seed: the Lite0
# detector lifts both the reference and the strong detector far above the MobileNetV2 one; the
# trained trunk as the start helps the reference, not the strong detector on pseudo labels.
#   make -j2 all PIPELINE=pipelines/voc07_cpu_trunk_init.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu.py']

backbone_from_black_box = 1  # wsod strong --init-backbone <run>/weak/weak_model.json
strong = dict(
    config='configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py',
    seed=0)
