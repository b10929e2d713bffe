# PASCAL VOC 2007 with image-level labels only (weak-label split json + proposals).
# Paths are placeholders: `wsod weak` / wsod.stages.weak.run sets ann_file, data_root and
# proposal_file of the train and test dataloaders from its explicit arguments.
dataset_type = 'WSODWeakDataset'
data_root = None  # None: the split's info.data_root (where `wsod data` found the images)
backend_args = None

train_pipeline = [
    dict(type='LoadImageFromFile', backend_args=backend_args),
    # proposal files are sorted by score: keep the best 2000, drop slivers < 8 px, then train
    # on a random 500 per image and step (RoIAlign + head cost is linear in RoIs: 2000 RoIs
    # cost 0.7 s forward+backward on CPU, 500 about a quarter; a new subset each step also
    # acts as augmentation)
    dict(type='WSODLoadProposals', num_max_proposals=2000, min_size=8, num_sample=500),
    dict(
        type='ProposalBroadcaster',
        transforms=[
            # multi-scale training, short side 320-448 (VOC images are ~500x375, so about
            # 0.85-1.2x): 320x480 costs 0.26 s backbone forward+backward on CPU
            dict(type='RandomChoiceResize',
                 scales=[(1000, 320), (1000, 384), (1000, 448)],
                 keep_ratio=True),
            dict(type='RandomFlip', prob=0.5),
        ]),
    dict(type='WSODPackWeakInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile', backend_args=backend_args),
    # 1000 proposals per image at test: scoring 2000 costs ~0.5 s per image on CPU, and the
    # best-ranked half holds nearly all object-covering boxes
    dict(type='WSODLoadProposals', num_max_proposals=1000, min_size=8),
    dict(
        type='ProposalBroadcaster',
        transforms=[dict(type='Resize', scale=(1000, 384), keep_ratio=True)]),
    dict(type='WSODPackWeakInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor',
                    'image_labels')),
]

train_dataloader = dict(
    batch_size=2,  # OICR trains on 2 images per step
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    batch_sampler=dict(type='AspectRatioBatchSampler'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        ann_file='data/voc07/train.json',
        proposal_file='data/voc07/proposals/train.pkl',
        filter_empty=True,
        pipeline=train_pipeline,
        backend_args=backend_args))
test_dataloader = dict(
    batch_size=1,
    num_workers=2,
    persistent_workers=False,
    drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        ann_file='data/voc07/val.json',
        proposal_file='data/voc07/proposals/val.pkl',
        test_mode=True,
        pipeline=test_pipeline,
        backend_args=backend_args))
# inference writes COCO results json (the weak detections contract); the stage sets out_file
test_evaluator = dict(type='WSODDumpCocoResults', out_file='work_dirs/weak/val_dets.json',
                      score_thr=0.0, max_per_image=100)
# no in-training validation: weak mAP is measured by `wsod evaluate` on the written detections
val_dataloader = None
val_evaluator = None
