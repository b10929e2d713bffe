# Your own images with tags only -> a detector. Copy this file into pipelines/ (its `_base_` is
# relative to it), point `source` at your folder (or give DATA_ROOT=), and run:
#   make all PIPELINE=pipelines/custom_example.py DATA_ROOT=data/my_images
#   make predict PIPELINE=pipelines/custom_example.py IMAGES=new_photos/
# The folder holds the images and two CSV files of tags, one row per image, 'file,tag1;tag2'
# (file relative to the folder; 'file,' = an image with none of the classes):
#   data/my_images/train.csv   the images the detector learns from (a few hundred per class helps)
#   data/my_images/val.csv     held-out images the report shows the detectors on
# The classes are the sorted tag names (or data.classes). Without boxes, what needs them is
# skipped with a line saying why: mAP / CorLoc / pseudo-label precision (evaluate) and the fully
# supervised reference (fsd = 0 here; fsd = 1 is refused on such data). The report shows what
# the tags allow: images per class, how often each detector finds the tagged classes, the weak
# and strong detectors' agreement, the pseudo labels and the detectors' boxes on images.
# Boxes for a few images, if you have some, bring the box numbers back for those images only:
#   data = dict(..., boxes='data/my_boxes.json')  (a COCO json, or a folder of VOC XML files)
# First a quick look (minutes: 24 images per split, every training 10 steps, its own run folder
# work_dirs/<name>_quick), then the real run:
#   make all PIPELINE=pipelines/custom_example.py DATA_ROOT=data/my_images QUICK=1
# Every value here is checked when make reads this file, before any stage runs.
# Everything else is the VOC 2007 CPU pipeline's (settings that work for photos of everyday
# objects at VOC's scale): its proposals, its black box (the EfficientNet-Lite0 CAM + affinity
# phase; the number of classes comes from the data), its de-noise chain and rescoring by the
# black box's class probability. Every value is an option of `wsod <stage>`.
# On far fewer images, shorten both phases of the black box, the branch taking the last fifth:
# weak = dict(max_iters=N, affinity_start_iter=M) with M = 4 * N // 5 (a schedule that ends
# before the branch's phase is refused up front).
_base_ = ['./voc07_cpu.py']

fsd = 0  # the fully supervised reference needs boxes on every train image

# CSV of tags per split in `source`; the splits name the CSV files (train.csv, val.csv)
data = dict(source='data/my_images', format='csv')
# Faster R-CNN MobileNetV2-FPN, 4 epochs on the pseudo labels, for any number of classes (the
# VOC pipeline's background-weighted variant spells out VOC's 20 classes)
strong = dict(
    config='configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py')
