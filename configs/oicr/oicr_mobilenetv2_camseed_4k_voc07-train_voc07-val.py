# CAM -> OICR: the MobileNetV2 OICR config whose first refinement branch is supervised by the
# CAM black box's detections on train (seeds) instead of its own WSDDN scores. The plain OICR
# run on VOC collapsed onto object parts (val mAP 0.2: its WSDDN branch picks parts and the
# refinement follows), while the CAM's top boxes hold a third of the objects (train CorLoc
# 34.3); the refinement branches learn instance classifiers from those boxes and refine them.
# Image labels and a detector's outputs only: the seed file is `wsod weak`'s train_dets.json.
# Measured: demo 62.2 val mAP (CAM 21.7). VOC, seeded by the 4k CAM (21.0): val mAP 9.0, train
# CorLoc 32.5, 38 min with detection, 3.0 GB; its top boxes are larger than the seeds (IoU >= 0.5
# with a seed makes a positive, so the branches learn "contains the seed"; docs/results.md).
# By hand, after the pipeline's CAM weak stage:
#   wsod weak --config configs/oicr/oicr_mobilenetv2_camseed_4k_voc07-train_voc07-val.py \
#       --work-dir work_dirs/voc07_cpu/weak_camseed \
#       --train-split work_dirs/voc07_cpu/data/train.json \
#       --train-proposals work_dirs/voc07_cpu/proposals/train.pkl \
#       --infer work_dirs/voc07_cpu/data/val.json:work_dirs/voc07_cpu/proposals/val.pkl \
#       --cfg-options train_dataloader.dataset.seed_file=work_dirs/voc07_cpu/weak/train_dets.json
_base_ = './oicr_mobilenetv2_4k_voc07-train_voc07-val.py'

# the CAM detections on train (COCO results json of the same split); set per run
train_dataloader = dict(dataset=dict(seed_file='work_dirs/voc07_cpu/weak/train_dets.json'))
