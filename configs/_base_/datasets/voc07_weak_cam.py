# voc07_weak.py's data for the CAM black box: training reads no proposals (a single one per
# image keeps the pipeline's shape), and test time scores all 2000 (a few ms on a CAM).
_base_ = './voc07_weak.py'

# training ignores proposals: load a single one per image (the pipeline still carries them)
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=1),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='RandomChoiceResize', scales=[(1000, 320), (1000, 384), (1000, 448)],
             keep_ratio=True),
        dict(type='RandomFlip', prob=0.5)]),
    dict(type='WSODPackWeakInputs'),
]
# scoring proposals on a CAM costs a few ms: score all 2000 at test
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=2000, min_size=8),
    dict(type='ProposalBroadcaster',
         transforms=[dict(type='Resize', scale=(1000, 384), keep_ratio=True)]),
    dict(type='WSODPackWeakInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                    'image_labels')),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
