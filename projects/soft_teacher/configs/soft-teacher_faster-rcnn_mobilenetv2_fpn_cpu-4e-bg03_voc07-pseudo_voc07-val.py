# Semi-supervised retraining on incomplete pseudo labels: mmdet's Soft Teacher (SoftTeacher +
# MeanTeacherHook + MultiBranch pipelines + MultiSourceSampler, as in mmdet's
# configs/soft_teacher/) around the pipeline's CPU Faster R-CNN (MobileNetV2-FPN, <= 480x320,
# background loss 0.3, 5,000 iterations: the cpu-4e-bg03 config it inherits).
# Labelled set: the train images that still have pseudo boxes after the de-noise chain (e.g.
# `image_filter` or `reliable_images`: images whose every labelled class has a confident box).
# Unlabelled set: the other train images (`strong_inputs.which = 'rest'`) or every train image
# ('all'), with their image-level labels; the teacher's pseudo boxes on them are restricted to
# those classes (WSODLabelRestrictedSoftTeacher), so it mines several boxes per labelled class
# where the pseudo labels have one. `wsod strong` writes both annotation files and wires them
# in (this project's WSODUnlabelledImages, named by strong_inputs below); the image labels come
# from the train split (--train-split, else the pseudo labels' info.split_file). Not the
# pipeline default: select it with projects/soft_teacher/pipelines/voc07_cpu_semi.py (the fully
# supervised reference stays the plain detector on the real boxes).
_base_ = '../../../configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py'

# this project's modules (the teacher, its hook and dataset, the strong stage's plug-in)
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.soft_teacher.soft_teacher'],
    allow_failed_imports=False)

# the strong stage writes the unlabelled images (WSODUnlabelledImages) and wires them in.
# which='rest': unlabelled = train images without a pseudo box; 'all': every train image (the
# labelled ones too: the teacher may add the objects their one box per class missed)
# On VOC both scored below the plain detector on the same labels, 'all' less so
# (docs/experiments/2026-12-05-semi-supervised-strong.md)
strong_inputs = dict(type='WSODUnlabelledImages', which='rest')

detector = _base_.model
model = dict(
    _delete_=True,
    type='WSODLabelRestrictedSoftTeacher',
    detector=detector,
    data_preprocessor=dict(
        type='MultiBranchDataPreprocessor', data_preprocessor=detector.data_preprocessor),
    semi_train_cfg=dict(
        freeze_teacher=True,
        sup_weight=1.0,
        # two labelled and one unlabelled image per iteration (mmdet: 1 + 4 images, weight 4)
        unsup_weight=1.0,
        # the image labels already remove every wrong-class teacher box, the main error the
        # COCO settings (0.5 / 0.9) guard against, so the class threshold is lower: a
        # MobileNetV2 teacher on a 5,000-iteration schedule rarely reaches 0.9
        pseudo_label_initial_score_thr=0.5,
        # a labelled class with no teacher box above that threshold keeps its best box (the
        # image label says the object is there: without it the image teaches background)
        top1_per_image_label=True,
        rpn_pseudo_thr=0.7,
        cls_pseudo_thr=0.7,
        reg_pseudo_thr=0.02,
        jitter_times=10,  # RoI-head passes on jittered boxes only: cheap next to the backbone
        jitter_scale=0.06,
        min_pseudo_bbox_wh=(1e-2, 1e-2)),
    semi_test_cfg=dict(predict_on='teacher'))  # the mean teacher detects (wsod strong --infer)

# Augmentations on a CPU budget. Every branch stays at most 480x320 (the inherited scale): the
# backbone pass is the cost, so the student's strong view jitters the scale only a little and
# adds photometric changes (one RandAugment colour op) and cut-out (RandomErasing), all cheap
# numpy/cv2 ops on a small image; mmdet's geometric RandAugment ops (rotate, shear) are left out:
# an affine warp per image for a gain measured on COCO at 1333x800, not here. The teacher's weak
# view is the test-time view (resize + flip), as in mmdet's soft_teacher.
scale = (480, 320)
strong_scales = [(400, 267), (560, 373)]  # +-17 % around `scale`, aspect kept
color_space = [
    [dict(type='ColorTransform')], [dict(type='AutoContrast')], [dict(type='Equalize')],
    [dict(type='Sharpness')], [dict(type='Posterize')], [dict(type='Solarize')],
    [dict(type='Color')], [dict(type='Contrast')], [dict(type='Brightness')],
]
branch_field = ['sup', 'unsup_teacher', 'unsup_student']
unsup_meta_keys = ('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor', 'flip',
                   'flip_direction', 'homography_matrix', 'image_labels')
# labelled images: the plain strong config's augmentation (pseudo boxes are noisy enough)
sup_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='MultiBranch', branch_field=branch_field, sup=dict(type='PackDetInputs')),
]
weak_pipeline = [
    dict(type='Resize', scale=scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs', meta_keys=unsup_meta_keys),  # image_labels: the restriction
]
strong_pipeline = [
    dict(type='RandomResize', scale=strong_scales, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='RandAugment', aug_space=color_space, aug_num=1),
    dict(type='RandomErasing', n_patches=(1, 3), ratio=(0, 0.2)),
    dict(type='FilterAnnotations', min_gt_bbox_wh=(1e-2, 1e-2)),
    dict(type='PackDetInputs', meta_keys=unsup_meta_keys),
]
unsup_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadEmptyAnnotations'),
    dict(type='MultiBranch', branch_field=branch_field, unsup_teacher=weak_pipeline,
         unsup_student=strong_pipeline),
]

# `wsod strong` fills ann_file, data_root and classes of both (labelled first, as mmdet's
# semi-supervised samplers expect)
labeled_dataset = dict(
    type='CocoDataset',
    data_root=_base_.data_root,
    ann_file='train_annotations.json',
    data_prefix=dict(img=''),
    metainfo=_base_.metainfo,
    filter_cfg=dict(filter_empty_gt=True, min_size=32),
    pipeline=sup_pipeline)
unlabeled_dataset = dict(
    type='WSODImageLabelCocoDataset',  # carries each image's labels into its metainfo
    data_root=_base_.data_root,
    ann_file='unlabeled_images.json',
    data_prefix=dict(img=''),
    metainfo=_base_.metainfo,
    filter_cfg=dict(filter_empty_gt=False, min_size=32),
    pipeline=unsup_pipeline)
train_dataloader = dict(
    _delete_=True,
    batch_size=3,
    num_workers=2,
    persistent_workers=True,
    # 2 labelled + 1 unlabelled image per iteration: the labelled branch sees what the plain
    # config's batch of 2 sees, so the burn-in equals the plain detector's first half (with 1 + 1
    # the student saw half the labelled images and the teacher never reached the score
    # threshold on the demo). MultiSourceSampler, not mmdet's GroupMultiSourceSampler: the
    # grouped sampler never yields when a source lacks one orientation (small sets)
    sampler=dict(type='MultiSourceSampler', batch_size=3, source_ratio=[2, 1]),
    dataset=dict(type='ConcatDataset', datasets=[labeled_dataset, unlabeled_dataset]))

# Burn-in: the first half of the schedule learns from the labelled images alone (the unlabelled
# branch is skipped: these iterations cost what the plain detector's do), then the teacher becomes
# a copy of the student and the unlabelled images come in (WSODBurnInHook). Without it the
# teacher starts from random heads, never mines a box and the unlabelled images teach background
# (docs/experiments/2026-12-05-semi-supervised-strong.md).
burn_in_iters = 2500
# the student is trained, the teacher follows it (EMA; mmdet's momentum); the finite-loss hook
# of the inherited config stays first
custom_hooks = [
    dict(type='WSODFiniteLossHook', interval=1),
    dict(type='WSODBurnInHook', burn_in_iters=burn_in_iters, ramp_iters=0),
    dict(type='MeanTeacherHook'),
]
