"""Scale each positive RoI's classification loss by the weight of its pseudo box.

``WSODBoxWeightRandomSampler`` (the R-CNN sampler) records ``pos_gt_weights`` =
``gt_instances.weights[pos_assigned_gt_inds]`` on each sampling result;
``WSODWeightedShared2FCBBoxHead`` multiplies the positives' ``label_weights`` by them (negatives
and the box regression keep weight 1). ``loss_cls`` is then averaged over RoIs with a non-zero
weight, as mmdet does. Without ``gt_instances.weights`` both behave like mmdet's classes.
"""

from __future__ import annotations

import torch
from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
from mmdet.models.task_modules.samplers import RandomSampler
from mmdet.registry import MODELS, TASK_UTILS


@TASK_UTILS.register_module()
class WSODBoxWeightRandomSampler(RandomSampler):
    """``RandomSampler`` that keeps the weights of the boxes positives were assigned to."""

    def sample(self, assign_result, pred_instances, gt_instances, **kwargs):
        result = super().sample(assign_result, pred_instances, gt_instances, **kwargs)
        if "weights" in gt_instances:
            weights = gt_instances.weights.to(result.pos_assigned_gt_inds.device)
            result.pos_gt_weights = weights[result.pos_assigned_gt_inds.long()]
        return result


@MODELS.register_module()
class WSODWeightedShared2FCBBoxHead(Shared2FCBBoxHead):
    """``Shared2FCBBoxHead`` whose positives' classification weights are their box weights."""

    def get_targets(self, sampling_results, rcnn_train_cfg, concat: bool = True) -> tuple:
        labels, label_weights, bbox_targets, bbox_weights = super().get_targets(
            sampling_results, rcnn_train_cfg, concat=False
        )
        label_weights = list(label_weights)
        for i, res in enumerate(sampling_results):
            w = getattr(res, "pos_gt_weights", None)
            if w is None or not len(w):
                continue
            lw = label_weights[i].clone()
            lw[: len(w)] = lw[: len(w)] * w.to(lw)  # positives come first (_get_targets_single)
            label_weights[i] = lw
        if concat:
            return (
                torch.cat(labels, 0),
                torch.cat(label_weights, 0),
                torch.cat(bbox_targets, 0),
                torch.cat(bbox_weights, 0),
            )
        return labels, label_weights, bbox_targets, bbox_weights
