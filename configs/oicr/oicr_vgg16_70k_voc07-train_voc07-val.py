# OICR on ImageNet VGG16 (the paper's setting; GPU). Multi-GPU: `torchrun --nproc_per_node=N
# -m wsod weak ... --launcher pytorch` (mmengine launcher); batch 2 per GPU.
_base_ = [
    '../_base_/models/oicr_vgg16.py',
    '../_base_/datasets/voc07_weak.py',
    '../_base_/schedules/weak_sgd_70k.py',
    '../_base_/default_runtime.py',
]
# OICR's scales: short side in {480, 576, 688, 864, 1200}, long side <= 2000; test at 688
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=2000, min_size=8),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='RandomChoiceResize',
             scales=[(2000, 480), (2000, 576), (2000, 688), (2000, 864), (2000, 1200)],
             keep_ratio=True),
        dict(type='RandomFlip', prob=0.5)]),
    dict(type='WSODPackWeakInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=2000, min_size=8),
    dict(type='ProposalBroadcaster',
         transforms=[dict(type='Resize', scale=(2000, 688), keep_ratio=True)]),
    dict(type='WSODPackWeakInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                    'image_labels')),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
default_hooks = dict(
    checkpoint=dict(by_epoch=False, interval=5000, max_keep_ckpts=2),
    logger=dict(interval=50))
log_processor = dict(by_epoch=False)
