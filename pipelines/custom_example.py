# Your own images with tags only -> a detector. Copy this file, point `source` at your folder
# (or give DATA_ROOT=), and run:
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
# Settings: the VOC 2007 CPU pipeline's (pipelines/voc07_cpu.py), which work for photos of
# everyday objects at VOC's scale; every value is an option of `wsod <stage>`.
fsd = 0  # the fully supervised reference needs boxes on every train image
rounds = 0  # self-training rounds after the first strong detector (make ROUNDS=N)
# the final detector's scores x the CAM black box's probability of the class in the image
# (`wsod rescore`, and `wsod predict` does the same); 0 = the strong detector's own scores
rescore_by_black_box = 'image'

# CSV of tags per split in `source`; the splits name the CSV files (train.csv, val.csv)
data = dict(source='data/my_images', format='csv', splits=['train', 'val'])
# selective search (fast mode) on images resized to a max side of 500 px; 2 worker processes
proposals = dict(method='selective_search', mode='fast', max_boxes=2000, workers=2)
# the CAM black box: ImageNet EfficientNet-Lite0 trained on the tags (4,000 steps x 2 images),
# then its affinity branch (1,000 steps) on the classifier's own seeds; boxes are scored on the
# CAMs walked on those affinities. On far fewer images, shorten both phases, the branch taking
# the last fifth: weak = dict(..., max_iters=N, affinity_start_iter=M) with M = 4 * N // 5 (a
# schedule that ends before the branch's phase is refused up front). The number of classes
# comes from the data. A lighter black box:
# configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py (one phase; max_iters alone)
weak = dict(config='configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py',
            seed=0)
# top-1 box per tagged class, then only the images whose every tagged class has a box scoring
# >= 0.2 (the VOC pipeline's chain)
denoise = dict(strategies=[
    dict(type='label_consistency'),
    dict(type='top1'),
    dict(type='image_filter', min_score=0.2),
])
# Faster R-CNN MobileNetV2-FPN, 4 epochs on the pseudo labels; any number of classes (the VOC
# pipeline's background-weighted variant spells out VOC's 20 classes). Shorter: strong =
# dict(..., max_iters=N) (training iterations; also the reference's and every round's)
strong = dict(
    config='configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py',
    seed=0)
