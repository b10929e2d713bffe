# The VOC07 CPU pipeline with the EfficientNet-Lite0 CAM black box followed by its learned
# affinity phase (issue 31): 4,000 classifier steps, then 1,000 steps of the affinity branch
# alone; detection walks the CAMs on the learned affinities and scores boxes on the walked
# region (configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py,
# docs/experiments/2026-12-05-learned-affinity.md). Everything else as voc07_cpu_effnet.py.
#   make -j2 all PIPELINE=pipelines/voc07_cpu_effnet_affinity.py \
#       DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['./voc07_cpu_effnet.py']

run_name = 'voc07_cpu_effnet_affinity'
weak = dict(config='configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py',
            seed=0)
