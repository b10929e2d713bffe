# The VOC07 CPU pipeline with the black box it had before issue 31: the CAM on ImageNet
# MobileNetV2, 4,000 steps, boxes scored on the raw CAMs (the headline of commit a093982,
# docs/results.md); everything else as pipelines/voc07_cpu.py. No fully supervised reference
# (it does not depend on the black box: see the voc07_cpu run).
#   make -j2 all PIPELINE=pipelines/voc07_cpu_mobilenetv2.py \
#       DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu.py']

fsd = 0
weak = dict(config='configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py', seed=0)
