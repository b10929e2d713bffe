# CAM -> OICR: the MobileNetV2 OICR config whose first refinement branch is supervised by the
# CAM black box's detections on train (seeds) instead of its own WSDDN scores. The plain OICR
# run on VOC collapses onto object parts (its WSDDN branch picks parts and the refinement
# follows), while the CAM's top boxes hold whole objects more often; the refinement branches
# learn instance classifiers from those boxes and refine them.
# Image labels and a detector's outputs only: the seed file is `wsod weak`'s train_dets.json.
# Measured (far above the CAM on the demo, below it on VOC, where its top boxes grow larger than
# the seeds: IoU >= 0.5 with a seed makes a positive, so the branches learn "contains the seed"):
# docs/experiments/2026-12-03-other-black-boxes.md
# By hand, after the pipeline's CAM weak stage:
#   wsod weak --config projects/mil_baselines/configs/oicr/oicr_mobilenetv2_camseed_4k_voc07-train_voc07-val.py \
#       --work-dir work_dirs/voc07_cpu/weak_camseed \
#       --train-split work_dirs/voc07_cpu/data/train.json \
#       --train-proposals work_dirs/voc07_cpu/proposals/train.pkl \
#       --infer work_dirs/voc07_cpu/data/val.json:work_dirs/voc07_cpu/proposals/val.pkl \
#       --cfg-options train_dataloader.dataset.seed_file=work_dirs/voc07_cpu/weak/train_dets.json
_base_ = './oicr_mobilenetv2_4k_voc07-train_voc07-val.py'

# the CAM detections on train (COCO results json of the same split); set per run
train_dataloader = dict(dataset=dict(seed_file='work_dirs/voc07_cpu/weak/train_dets.json'))
