# The embedded synthetic demo dataset (wsod.datasets.demo: 5 shape classes, 320x240 images)
# with image-level labels + proposals. Paths are placeholders set by the weak stage.
_base_ = './voc07_weak.py'

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=1000, min_size=6, num_sample=300),
    dict(
        type='ProposalBroadcaster',
        transforms=[
            # images are 320x240: train at native size and a little above/below
            dict(type='RandomChoiceResize', scales=[(400, 208), (400, 240), (400, 272)],
                 keep_ratio=True),
            dict(type='RandomFlip', prob=0.5),
        ]),
    dict(type='WSODPackWeakInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=1000, min_size=6),
    dict(type='ProposalBroadcaster',
         transforms=[dict(type='Resize', scale=(400, 240), keep_ratio=True)]),
    dict(type='WSODPackWeakInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                    'image_labels')),
]
train_dataloader = dict(
    dataset=dict(ann_file='data/demo/train.json',
                 proposal_file='data/demo/proposals/train.pkl', pipeline=train_pipeline))
test_dataloader = dict(
    dataset=dict(ann_file='data/demo/val.json',
                 proposal_file='data/demo/proposals/val.pkl', pipeline=test_pipeline))
