# The VOC07 CPU pipeline with the CAM black box on Google's ImageNet EfficientNet-Lite0 instead of
# MobileNetV2 (issue 31): everything else as pipelines/voc07_cpu.py (de-noise chain, the strong
# MobileNetV2-FPN detector), so the two runs differ only in the black box's trunk. No fully
# supervised reference (it does not depend on the black box: see the voc07_cpu run).
#   make -j2 all PIPELINE=pipelines/voc07_cpu_effnet.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu.py']

run_name = 'voc07_cpu_effnet'
fsd = 0
weak = dict(config='configs/cam/cam_efficientnet-lite0_4k_voc07-train_voc07-val.py', seed=0)
