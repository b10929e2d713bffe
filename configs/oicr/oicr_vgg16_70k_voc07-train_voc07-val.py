# OICR on ImageNet VGG16 (the paper's setting; GPU). Multi-GPU: `torchrun --nproc_per_node=N
# -m wsod weak ... --launcher pytorch` (mmengine launcher); batch 2 per GPU.
_base_ = [
    '../_base_/models/oicr_vgg16.py',
    '../_base_/datasets/voc07_weak_multiscale.py',
    '../_base_/schedules/weak_sgd_70k.py',
    '../_base_/weak_runtime.py',
]
default_hooks = dict(checkpoint=dict(interval=5000), logger=dict(interval=50))
