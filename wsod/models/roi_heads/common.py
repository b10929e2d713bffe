"""Helpers every proposal-scoring head shares: image-label targets and per-class NMS."""

from __future__ import annotations

import torch
from mmdet.models.layers import multiclass_nms
from mmengine.structures import InstanceData
from torch import Tensor


def image_label_targets(image_labels: list, num_classes: int, device=None) -> Tensor:
    """List (per image) of 0-based class indices -> (B, C) float multi-hot targets."""
    out = torch.zeros(len(image_labels), num_classes, device=device)
    for i, labels in enumerate(image_labels):
        if len(labels):
            out[i, torch.as_tensor(list(labels), dtype=torch.long, device=device)] = 1.0
    return out


def nms_detections(
    bboxes: Tensor, scores: Tensor, meta: dict, rescale: bool, cfg: dict
) -> InstanceData:
    """Per-class NMS of one image's scored proposals.

    Args:
        bboxes: (R, 4) x1y1x2y2 in input pixels.
        scores: (R, C) class scores (no background column).
        meta: image meta (``scale_factor`` (w, h), ``ori_shape`` (h, w)) for ``rescale``.
        rescale: map boxes back to original-image pixels (and clip to it).
        cfg: ``score_thr``, ``nms`` (mmcv nms config), ``max_per_img``.

    Returns:
        ``InstanceData(bboxes (k,4), scores (k,), labels (k,))`` sorted by score.
    """
    bboxes = bboxes.clone().float()
    if rescale and "scale_factor" in meta:
        sx, sy = meta["scale_factor"]
        bboxes /= bboxes.new_tensor([sx, sy, sx, sy])
        h, w = meta["ori_shape"][:2]
        bboxes[:, 0::2] = bboxes[:, 0::2].clamp(0, w)
        bboxes[:, 1::2] = bboxes[:, 1::2].clamp(0, h)
    # multiclass_nms expects a trailing background column (ignored)
    multi_scores = torch.cat([scores, scores.new_zeros(len(scores), 1)], dim=1)
    dets, labels = multiclass_nms(
        bboxes, multi_scores, cfg["score_thr"], cfg["nms"], cfg["max_per_img"]
    )
    res = InstanceData()
    res.bboxes = dets[:, :4]
    res.scores = dets[:, 4]
    res.labels = labels
    return res
