# The VOC07 CPU pipeline without the black box's learned affinity phase (issue 31): the same
# EfficientNet-Lite0 CAM, 4,000 classifier steps, boxes scored on the raw CAMs; everything else
# as pipelines/voc07_cpu.py (de-noise chain, the strong detector), so the two
# runs differ only in the affinity phase (docs/experiments/2026-12-05-learned-affinity.md). No
# fully supervised reference (it does not depend on the black box: see the voc07_cpu run).
#   make -j2 all PIPELINE=pipelines/voc07_cpu_effnet.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu.py']

fsd = 0
weak = dict(config='configs/cam/cam_efficientnet-lite0_4k_voc07-train_voc07-val.py', seed=0)
