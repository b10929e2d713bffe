"""Carry each pseudo box's ``weight`` from the json to ``gt_instances.weights``.

``WSODPseudoCocoDataset`` keeps each box's weight per instance (:func:`wsod.contracts.box_weight`:
its ``weight``, else its ``score``, else 1.0; the strong stage writes ``weight`` on every box),
``WSODLoadBoxWeights``
(right after ``LoadAnnotations``) puts them in ``results['gt_box_weights']`` aligned with
``gt_bboxes``, and ``WSODPackDetInputs`` packs them as ``gt_instances.weights``. Transforms
that drop boxes (``RandomCrop``, ``FilterAnnotations``) do not know this key: put no such
transform between the two.
"""

from __future__ import annotations

import numpy as np
from mmcv.transforms import BaseTransform
from mmdet.datasets import CocoDataset
from mmdet.datasets.transforms import PackDetInputs
from mmdet.registry import DATASETS, TRANSFORMS

from wsod.contracts import box_weight


@DATASETS.register_module()
class WSODPseudoCocoDataset(CocoDataset):
    """``CocoDataset`` whose instances keep the annotation's weight
    (:func:`wsod.contracts.box_weight`)."""

    def parse_data_info(self, raw_data_info: dict) -> dict:
        info = super().parse_data_info(raw_data_info)
        # CocoDataset drops some annotations (bad boxes, other classes): redo its filter to
        # pair each kept instance with its annotation
        kept = [a for a in raw_data_info["raw_ann_info"] if self._kept(a, raw_data_info)]
        if len(kept) != len(info["instances"]):
            raise RuntimeError("WSODPseudoCocoDataset: instance/annotation mismatch")
        for inst, ann in zip(info["instances"], kept, strict=True):
            inst["weight"] = box_weight(ann)
        return info

    def _kept(self, ann: dict, raw: dict) -> bool:
        img = raw["raw_img_info"]
        if ann.get("ignore", False):
            return False
        x1, y1, w, h = ann["bbox"]
        inter_w = max(0, min(x1 + w, img["width"]) - max(x1, 0))
        inter_h = max(0, min(y1 + h, img["height"]) - max(y1, 0))
        return (
            inter_w * inter_h != 0
            and ann["area"] > 0
            and w >= 1
            and h >= 1
            and ann["category_id"] in self.cat_ids
        )


@TRANSFORMS.register_module()
class WSODLoadBoxWeights(BaseTransform):
    """``results['gt_box_weights']``: float32 (N,) weights aligned with ``gt_bboxes``."""

    def transform(self, results: dict) -> dict:
        weights = [box_weight(inst) for inst in results.get("instances", [])]
        results["gt_box_weights"] = np.asarray(weights, dtype=np.float32)
        return results


@TRANSFORMS.register_module()
class WSODPackDetInputs(PackDetInputs):
    """``PackDetInputs`` that also packs ``gt_box_weights`` as ``gt_instances.weights``."""

    mapping_table = {**PackDetInputs.mapping_table, "gt_box_weights": "weights"}
