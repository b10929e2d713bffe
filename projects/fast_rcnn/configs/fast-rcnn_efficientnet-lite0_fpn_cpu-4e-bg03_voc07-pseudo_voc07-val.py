# Fast R-CNN on the pipeline's own selective-search proposals (issue 39, lever 2): the cpu-4e-bg03
# Faster R-CNN on EfficientNet-Lite0 (same trunk + light FPN, RoI head with background loss 0.3,
# 5,000 iterations x 2 images, inputs <= 480x320) with its RPN taken out. Why: the RPN learns its proposals from
# pseudo labels that hold ~19 % of the train objects, so it learns to miss the rest; selective
# search proposes objects whatever the labels say. mmdet's FastRCNN detector reads the proposals
# from `wsod proposals` (`<run>/proposals/{train,val}.pkl`, the .npz twin preferred) through
# WSODProposalCocoDataset; WSODLoadProposals returns them as HorizontalBoxes so that mmdet's
# ProposalBroadcaster resizes and flips them with the image.
# Proposals per image: training takes the first 2,000 (the file is sorted by score; the VOC
# pipeline computes at most 2,000), all of them: the RoI head's sampler already draws 128 RoIs
# per image (25 % positives) from the candidates, so 2,000 candidates cost only their IoU with
# the few pseudo boxes and the box transforms, while a random subset (WSODLoadProposals'
# num_sample) would only thin out the positives the sampler draws from. Detection scores the
# first 1,000 (the RoI head runs on every one: 10x the 100 RPN proposals the Faster R-CNN scores
# at test time; Fast R-CNN's paper tests on 2,000).
# Measured on VOC and not adopted: below the Faster R-CNN it is built from, on the real boxes and
# on the pseudo labels; selective search's boxes are looser than the RPN's learnt, regressed
# proposals (projects/fast_rcnn/README.md, docs/experiments/2026-12-06-strong-ceiling.md).
#   wsod strong --config projects/fast_rcnn/configs/fast-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py \
#       --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json --work-dir work_dirs/voc07_cpu/strong \
#       --train-proposals work_dirs/voc07_cpu/proposals/train.pkl \
#       --infer work_dirs/voc07_cpu/data/val.json:work_dirs/voc07_cpu/proposals/val.pkl:work_dirs/voc07_cpu/strong/val_dets.json
_base_ = '../../../configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py'

# the strong stage (and make, through the pipeline) gives this config proposals:
# `wsod strong --train-proposals PKL --infer SPLIT:PROPOSALS:OUT`
reads_proposals = True
num_train_proposals = 2000
num_test_proposals = 1000

custom_imports = dict(
    imports=['wsod.models', 'wsod.datasets.weak_dataset', 'wsod.datasets.proposal_dataset'],
    allow_failed_imports=False)

# mmdet's FastRCNN takes no rpn_head (nor rpn / rpn_proposal settings): the inherited Faster
# R-CNN's parts, without its RPN
model = dict(
    _delete_=True,
    type='FastRCNN',
    data_preprocessor=_base_.model.data_preprocessor,
    backbone=_base_.model.backbone,
    neck=_base_.model.neck,  # its stride-64 level fed only the RPN: the RoI head reads 8-32
    roi_head=_base_.model.roi_head,
    train_cfg=dict(rcnn=_base_.model.train_cfg.rcnn),
    test_cfg=dict(rcnn=_base_.model.test_cfg.rcnn))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=num_train_proposals),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='Resize', scale=(480, 320), keep_ratio=True),
        dict(type='RandomFlip', prob=0.5),
    ]),
    dict(type='WSODPackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='WSODLoadProposals', num_max_proposals=num_test_proposals),
    dict(type='ProposalBroadcaster', transforms=[
        dict(type='Resize', scale=(480, 320), keep_ratio=True),
    ]),
    dict(type='WSODPackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
# `wsod strong` sets proposal_file (absolute) from --train-proposals / --infer; the placeholders
# follow the Makefile layout (<run>/proposals/) so the config also loads in plain mmdet tools
train_dataloader = dict(dataset=dict(
    type='WSODProposalCocoDataset', proposal_file='proposals/train.pkl',
    pipeline=train_pipeline))
test_dataloader = dict(dataset=dict(
    type='WSODProposalCocoDataset', proposal_file='proposals/val.pkl', pipeline=test_pipeline))
