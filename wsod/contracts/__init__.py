"""The formats the stages exchange, with one validator each (used on write and on read).

Box convention inside the code: absolute pixels, float, ``x1, y1, x2, y2``, 0-based. Files use
COCO's ``x, y, w, h``; conversion happens only here and in the dataset loaders/exporters.

| artifact         | file                         | format                                               |
|------------------|------------------------------|------------------------------------------------------|
| dataset split    | ``<split>.json``             | COCO-style ``images`` (+ per image ``labels``),      |
|                  |                              | ``categories``, ``info.data_root``; **no boxes**     |
| eval-only boxes  | ``<split>_gt.json``          | COCO instances json (+ ``difficult`` per box)        |
| proposals        | ``*.pkl`` / ``*.npz``        | mmdet proposal contract: ``{file_name: {"bboxes":    |
|                  |                              | float32 (N,4) x1y1x2y2, "scores": float32 (N,)}}``   |
| weak detections  | ``*.json``                   | COCO results list (image_id, category_id, bbox, score)|
| pseudo labels    | ``*.json``                   | COCO instances json, ``score`` (and ``weight``) kept  |
| metrics          | ``eval/metrics.json``        | per detector VOC / COCO AP, per-class AP and PR      |
|                  |                              | curves, caveats (:func:`validate_metrics`)           |

Converters from these formats to arrays live here too (:func:`detections_to_arrays`,
:func:`detections_by_image`, :func:`pseudo_label_detections`); ground truth is converted by the
eval-only :mod:`wsod.evaluation.gt`, which the training side never imports.

The validators live in ``core`` (boxes, splits, ground truth, detections, pseudo labels,
proposals), ``metrics`` (``metrics.json``) and ``train_annotations`` (the strong stage's
training boxes); this package exports them all (``contracts.load_split``, ...).

A split's ``file_name`` is relative to ``info.data_root`` (for VOC: ``JPEGImages/000005.jpg``,
which is also the key mmdet's ``load_proposals`` derives from an image path).

Image sizes (:data:`IMAGE_SIZES`, ``info.image_sizes = 'displayed'``): width, height and every
box of every artifact are those of the image as displayed, EXIF orientation applied, as
OpenCV's ``imread`` and mmcv's ``LoadImageFromFile`` read its pixels (a phone photo stored
4000x3000 with orientation 6 is 3000x4000 everywhere). The data stage records it,
:func:`validate_split` refuses another rule, and the proposals stage checks the pixels of each
image against its recorded size.
"""

from .core import (  # noqa: F401
    IMAGE_SIZES,
    ContractError,
    category_names,
    detections_by_image,
    detections_to_arrays,
    ground_truth_marks,
    group_by_image,
    is_ignored,
    load_detections,
    load_pseudo_labels,
    load_split,
    make_detections,
    pseudo_label_detections,
    resolve_data_root,
    validate_categories,
    validate_detections,
    validate_gt,
    validate_proposals,
    validate_pseudo_labels,
    validate_split,
    xywh_to_xyxy,
    xyxy_to_xywh,
)
from .metrics import (  # noqa: F401
    DETECTOR_ORDER,
    METRICS_CLASS_KEYS,
    METRICS_DETECTOR_KEYS,
    METRICS_KEYS,
    load_metrics,
    ordered_detectors,
    validate_metrics,
)
from .train_annotations import (  # noqa: F401
    TRAIN_ANNOTATION_KEYS,
    box_weight,
    load_train_annotations,
    validate_train_annotations,
)
