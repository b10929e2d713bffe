# The pipeline's strong detector (cpu-4e-bg03) with an image-level multi-label classifier beside
# its RoI head (WSODImageLabelRoIHead): pooled FPN features of strides 16, 32 and 64, trained on
# the classes of each image's training boxes (image labels; no box position), and at test time
# each detection's score multiplied by that classifier's probability of its class. Why: the
# strong detector's errors are mostly "which class" (another class's object, background), the
# thing image labels teach (issue 39, docs/experiments/2026-12-06-strong-ceiling.md). Measured on the
# real boxes and not adopted: projects/image_label_head/README.md.
_base_ = '../../../configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py'

# this project's head (WSODImageLabelRoIHead) into mmdet's MODELS
custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'projects.image_label_head.image_label_head'],
    allow_failed_imports=False)

model = dict(
    roi_head=dict(
        type='WSODImageLabelRoIHead',
        image_label=dict(in_channels=128, in_indices=(1, 2, 3), dropout=0.2, loss_weight=1.0)),
    # False: the detector's own scores (a test setting: no retraining)
    test_cfg=dict(rcnn=dict(image_label_rescore=True)))
