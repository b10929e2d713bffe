# Strong-stage data: train on a pseudo-label COCO instances json (`wsod denoise`), test on a
# weak-label split json (images + categories, no annotations; CocoDataset reads it in test_mode).
# `wsod strong` fills data_root, ann_file and metainfo from its arguments (data_root from the
# files' info.data_root, classes from their categories); the placeholders below follow the
# Makefile layout so the config also loads in plain mmdet tools.
dataset_type = 'CocoDataset'
data_root = 'data/VOCdevkit/VOC2007/'
# file_name in our json files is relative to data_root (e.g. JPEGImages/000005.jpg)
data_prefix = dict(img='')
metainfo = dict(classes=(
    'aeroplane', 'bicycle', 'bird', 'boat', 'bottle', 'bus', 'car', 'cat', 'chair', 'cow',
    'diningtable', 'dog', 'horse', 'motorbike', 'person', 'pottedplant', 'sheep', 'sofa',
    'train', 'tvmonitor'))
backend_args = None

# at most 480x320 (VOC's 500x375 -> 427x320): ~1/4 of the pixels of mmdet's 1000x600, for
# training on a CPU
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=(480, 320), keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(480, 320), keep_ratio=True),
    # no LoadAnnotations: the test split carries no boxes
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]

# 2 loader processes decode JPEGs while the model computes (2 images per iteration)
train_dataloader = dict(
    batch_size=2,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),  # iteration-based schedules
    batch_sampler=dict(type='AspectRatioBatchSampler'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        ann_file='pseudo_train.json',
        data_prefix=data_prefix,
        metainfo=metainfo,
        # images whose pseudo labels are all gone teach nothing; 32 px is mmdet's VOC minimum
        filter_cfg=dict(filter_empty_gt=True, min_size=32),
        pipeline=train_pipeline,
        backend_args=backend_args))

test_dataloader = dict(
    batch_size=1,
    num_workers=2,
    persistent_workers=True,
    drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        ann_file='val.json',
        data_prefix=data_prefix,
        metainfo=metainfo,
        test_mode=True,
        pipeline=test_pipeline,
        backend_args=backend_args))
# inference writes COCO results json (label i -> category id i + 1); the stage sets out_file
test_evaluator = dict(type='WSODDumpCocoResults', out_file='val_dets.json')

# no validation during training: scoring needs ground-truth boxes, which belong to `evaluate`
val_dataloader = None
val_evaluator = None
