# The VOC 2007 CPU pipeline with the strong detector (and the reference) on the black box's own
# trunk, EfficientNet-Lite0, started from the black box's trained weights instead of ImageNet
# (issue 39, lever 1: docs/experiments/2026-12-06-strong-ceiling.md). Its baseline is
# pipelines/voc07_cpu.py (the same Lite0 detector from ImageNet). Measured with one seed: the
# trained trunk as the start helps the reference, not the strong detector on pseudo labels.
#   make -j2 all PIPELINE=pipelines/voc07_cpu_trunk_init.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu.py']

backbone_from_black_box = 1  # wsod strong --init-backbone <run>/weak/weak_model.json
