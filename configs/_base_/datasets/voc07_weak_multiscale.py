# VOC07 weak labels with the OICR paper's scales (GPU): train at short side
# {480, 576, 688, 864, 1200} (long side <= 2000) with flips on all 2000 proposals; test at 688.
_base_ = './voc07_weak.py'
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
