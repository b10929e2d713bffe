# The VOC 2007 CPU pipeline with Fast R-CNN on the pipeline's own selective-search proposals as
# the strong detector and the reference (issue 39, lever 2): the same EfficientNet-Lite0-FPN, RoI
# head (background loss 0.3), schedule and input scale as the Lite0 cpu-4e-bg03 Faster R-CNN
# (configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_*), without its RPN. What
# it measures: whether proposals that do not depend on the pseudo labels (which hold ~19 % of
# the train objects, so an RPN learnt on them learns to miss the rest) lift the strong
# detector's val mAP over that Faster R-CNN's, and how much of the reference's (real boxes) the
# change costs or gains (the ceiling with these proposals). Measured, not adopted: both detectors
# scored below the Faster R-CNN pipeline's (projects/fast_rcnn/README.md).
# make gives both detectors $(RUN)/proposals/{train,val}.pkl (reads_proposals = True in the config).
#   make -j2 all PIPELINE=projects/fast_rcnn/pipelines/voc07_cpu_fast_rcnn.py DATA_ROOT=../shared/data/VOCdevkit/VOC2007
_base_ = ['../../../pipelines/voc07_cpu.py']

strong = dict(
    config='projects/fast_rcnn/configs/fast-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py',
    seed=0, precision='auto')
