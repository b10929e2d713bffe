"""Unlabelled training images that keep their image-level labels.

``WSODImageLabelCocoDataset`` reads a COCO-style json whose images carry ``labels`` (category
ids present, as in a weak-label split) and puts them, as class indices (label ``i`` is category
``cat_ids[i]``), in each data info under :data:`IMAGE_LABELS_KEY`. mmdet's pipelines copy data
info keys into the results, so ``PackDetInputs(meta_keys=(..., 'image_labels'))`` hands them to
the model in each data sample's metainfo (the teacher restricts its pseudo boxes to them).
"""

from __future__ import annotations

from mmdet.datasets import CocoDataset
from mmdet.registry import DATASETS

IMAGE_LABELS_KEY = "image_labels"
"""Data info / metainfo key of an image's labels: sorted class indices (0-based)."""


@DATASETS.register_module()
class WSODImageLabelCocoDataset(CocoDataset):
    """``CocoDataset`` whose data infos carry the image's labels (:data:`IMAGE_LABELS_KEY`).

    An image without ``labels`` is an error (the file is not a weak-label split's images):
    the label restriction must never fall back to "every class" silently.
    """

    def parse_data_info(self, raw_data_info: dict) -> dict:
        info = super().parse_data_info(raw_data_info)
        img = raw_data_info["raw_img_info"]
        if "labels" not in img:
            raise KeyError(
                f"{self.ann_file}: image {img.get('id')} has no 'labels' (the image-level "
                "labels); write the unlabelled images from a weak-label split (wsod strong "
                "does)"
            )
        info[IMAGE_LABELS_KEY] = sorted({self.cat2label[int(c)] for c in img["labels"]})
        return info
