"""A RoI head that also learns which classes an image holds (image-level multi-label loss).

The strong detector's top detections land on another class's object or on background far more
often than the black box's (docs/results.md, "Where the top detections go"), while the black
box's classifier ranks images by class well. :class:`WSODImageLabelRoIHead` keeps mmdet's
``StandardRoIHead`` and adds a small classifier on the neck's features: global average pooling of
each level in ``in_indices``, concatenated, dropout, one linear layer, trained with a binary
cross-entropy against the image's classes (those of its training boxes: with pseudo labels, the
image labels the de-noise chain kept; no box position is used). At test time, unless
``test_cfg.rcnn.image_label_rescore=False`` (a test setting: changing it re-runs detection, not
training), each detection's score is multiplied by the image classifier's probability of its
class, the detector's own form of ``wsod rescore``. Training on image labels is legitimate
weak supervision; it adds one pooled vector per image, nothing per RoI.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.models.roi_heads import StandardRoIHead
from mmdet.registry import MODELS
from torch import Tensor


@MODELS.register_module()
class WSODImageLabelRoIHead(StandardRoIHead):
    """``StandardRoIHead`` + an image-level multi-label classifier on the neck's features.

    Args:
        image_label: ``dict(in_channels, in_indices=(-1,), dropout=0.2, loss_weight=1.0)``:
            width of the neck's levels, which levels are pooled, dropout before the linear
            layer, the loss's weight. ``num_classes`` is the bbox head's.
        **kwargs: ``StandardRoIHead``'s.
    """

    def __init__(self, image_label: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        opts = dict(in_indices=(-1,), dropout=0.2, loss_weight=1.0)
        unknown = set(image_label) - set(opts) - {"in_channels"}
        if unknown or "in_channels" not in image_label:
            raise ValueError(
                f"image_label: needs in_channels, takes {', '.join(opts)}; got "
                f"{sorted(image_label)}"
            )
        opts.update(image_label)
        self.in_indices: Sequence[int] = tuple(opts["in_indices"])
        self.loss_weight = float(opts["loss_weight"])
        num_classes = self.bbox_head.num_classes
        self.image_cls = nn.Sequential(
            nn.Dropout(float(opts["dropout"])),
            nn.Linear(int(opts["in_channels"]) * len(self.in_indices), num_classes),
        )

    def image_logits(self, x: tuple[Tensor]) -> Tensor:
        """(N, num_classes) logits of the classes each image holds."""
        pooled = [x[i].mean(dim=(2, 3)) for i in self.in_indices]
        return self.image_cls(torch.cat(pooled, dim=1))

    def loss(self, x, rpn_results_list, batch_data_samples) -> dict:
        losses = super().loss(x, rpn_results_list, batch_data_samples)
        logits = self.image_logits(x).float()
        targets = torch.zeros_like(logits)
        for i, sample in enumerate(batch_data_samples):
            targets[i, sample.gt_instances.labels.unique()] = 1.0
        bce = F.binary_cross_entropy_with_logits(logits, targets)
        losses["loss_img_cls"] = self.loss_weight * bce
        return losses

    def predict(self, x, rpn_results_list, batch_data_samples, rescale: bool = False):
        results = super().predict(x, rpn_results_list, batch_data_samples, rescale=rescale)
        if (self.test_cfg or {}).get("image_label_rescore", True):
            probs = self.image_logits(x).float().sigmoid()
            for i, res in enumerate(results):
                res.scores = res.scores * probs[i, res.labels]
        return results
