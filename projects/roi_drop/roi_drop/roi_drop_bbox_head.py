"""A bbox head that stops learning from the positive RoIs it keeps disagreeing with (RoI drop).

Pseudo labels are wrong for about half their boxes (too large, a part, another object); the
RoIs sampled around a wrong box are positives of a class whose evidence is not there, and
after a warm-up the detector gives them a high classification loss while its loss on RoIs
around right boxes falls. :class:`WSODRoIDropBBoxHead` keeps mmdet's ``Shared2FCBBoxHead``
and, from iteration ``start_iter`` on, gives zero weight (classification and regression) to
every positive RoI whose own cross-entropy exceeds ``cls_thr``, and zero regression weight to
a positive RoI whose regression loss exceeds ``reg_thr`` (``None``: no such test). Dropped RoIs
are ignored, not turned into background, and leave the loss's normaliser. The idea is
WeakSAM's RoI drop regularisation (drop RoIs whose loss stays above a threshold after a
warm-up, against noisy pseudo ground truth); the thresholds here are this head's own
parameters. Measured on VOC and not adopted: projects/roi_drop/README.md.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
from mmdet.registry import MODELS
from mmengine.logging import MessageHub
from torch import Tensor


@MODELS.register_module()
class WSODRoIDropBBoxHead(Shared2FCBBoxHead):
    """``Shared2FCBBoxHead`` that ignores positive RoIs with a loss above a threshold.

    Args:
        roi_drop: ``dict(cls_thr=4.0, reg_thr=None, start_iter=0)``: the per-RoI cross-entropy
            above which a positive RoI is ignored, the per-RoI regression loss (summed over the
            4 deltas, before the loss weight) above which its regression is ignored, and the
            training iteration (mmengine's ``iter``) from which the test applies.
        **kwargs: ``Shared2FCBBoxHead``'s.
    """

    def __init__(self, roi_drop: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        opts = dict(cls_thr=4.0, reg_thr=None, start_iter=0)
        unknown = set(roi_drop) - set(opts)
        if unknown:
            raise ValueError(f"roi_drop: takes {', '.join(opts)}; got unknown {sorted(unknown)}")
        opts.update(roi_drop)
        self.cls_thr = float(opts["cls_thr"])
        self.reg_thr = None if opts["reg_thr"] is None else float(opts["reg_thr"])
        self.start_iter = int(opts["start_iter"])
        if self.cls_thr <= 0 or (self.reg_thr is not None and self.reg_thr <= 0):
            raise ValueError(f"roi_drop: thresholds must be > 0; got {roi_drop}")
        if self.reg_thr is not None and self.reg_decoded_bbox:
            raise ValueError(
                "roi_drop: reg_thr reads the regression loss on deltas; this head "
                "has reg_decoded_bbox=True (loss on decoded boxes)"
            )

    def active(self) -> bool:
        """Whether this training iteration is past the warm-up."""
        return MessageHub.get_current_instance().get_info("iter", 0) >= self.start_iter

    def drop_masks(
        self, cls_score: Tensor, bbox_pred: Tensor, labels: Tensor, bbox_targets: Tensor
    ) -> tuple[Tensor, Tensor]:
        """(ignored entirely, regression ignored): boolean masks over the RoIs; positives only."""
        with torch.no_grad():
            pos = (labels >= 0) & (labels < self.num_classes)
            ce = F.cross_entropy(cls_score.float(), labels, reduction="none")
            drop_all = pos & (ce > self.cls_thr)
            drop_reg = drop_all.clone()
            if self.reg_thr is not None and pos.any():
                deltas = bbox_pred.float().view(bbox_pred.size(0), -1, 4)
                if deltas.size(1) > 1:  # class-specific regression: the label's 4 deltas
                    deltas = deltas[torch.arange(len(labels)), labels.clamp(max=deltas.size(1) - 1)]
                else:
                    deltas = deltas[:, 0]
                reg = self.loss_bbox(deltas, bbox_targets.float(), reduction_override="none")
                reg = reg.sum(dim=1) / max(float(self.loss_bbox.loss_weight), 1e-12)
                drop_reg |= pos & (reg > self.reg_thr)
        return drop_all, drop_reg

    def loss_and_target(
        self,
        cls_score: Tensor,
        bbox_pred: Tensor,
        rois: Tensor,
        sampling_results,
        rcnn_train_cfg,
        concat: bool = True,
        reduction_override: str | None = None,
    ) -> dict:
        labels, label_weights, bbox_targets, bbox_weights = self.get_targets(
            sampling_results, rcnn_train_cfg, concat=concat
        )
        dropped = cls_score.new_zeros(())
        if self.active():
            drop_all, drop_reg = self.drop_masks(cls_score, bbox_pred, labels, bbox_targets)
            label_weights = label_weights.masked_fill(drop_all, 0)
            bbox_weights = bbox_weights.masked_fill(drop_reg[:, None], 0)
            dropped = drop_all.float().sum()
        losses = self.loss(
            cls_score,
            bbox_pred,
            rois,
            labels,
            label_weights,
            bbox_targets,
            bbox_weights,
            reduction_override=reduction_override,
        )
        # logged beside the losses (mmengine logs every tensor whose key holds no 'loss')
        losses["roi_drop"] = dropped
        return dict(
            loss_bbox=losses, bbox_targets=(labels, label_weights, bbox_targets, bbox_weights)
        )
