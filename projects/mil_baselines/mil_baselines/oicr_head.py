"""``WSODOICRHead``: WSDDN + online instance classifier refinement (Tang et al., CVPR 2017).

On the shared fc features of the WSDDN head, K refinement branches each predict C + 1 classes
(background last, mmdet's convention). Branch k is supervised by pseudo labels made from the
scores of branch k - 1 (branch 0: the WSDDN proposal scores), all detached:

* for every class c present in the image (image-level label), the top-scoring proposal is a
  seed with score ``w_c``;
* each proposal takes the class of the seed it overlaps most if that IoU >= ``iou_thr``
  (default 0.5), else background; its loss weight is that seed's score ``w_c`` (proposals
  whose best IoU is below ``bg_iou_thr_lo`` get weight 0);
* loss = sum_r w_r * CE(branch_k(r), label_r) / R, averaged over images.

Inference scores (R, C) = mean over branches (or ``test_branches``) of softmax[:, :C]
(optionally averaged with the WSDDN scores), then per-class NMS. Boxes are x1y1x2y2 in input
pixels inside the model.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_overlaps
from torch import Tensor

from wsod.models.roi_heads.common import image_label_targets

from .wsddn_head import WSODWSDDNHead, init_linear


def oicr_pseudo_labels(
    proposals: Tensor,
    prev_scores: Tensor,
    image_labels: list[int],
    iou_thr: float = 0.5,
    bg_iou_thr_lo: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """OICR's online pseudo labels for one image.

    Args:
        proposals: (R, 4) x1y1x2y2.
        prev_scores: (R, C) scores of the previous stage (no background column).
        image_labels: the 0-based classes present in the image.
        iou_thr: IoU with a seed at or above which a proposal takes the seed's class.
        bg_iou_thr_lo: proposals whose best seed IoU is below this get weight 0 (ignored).

    Returns:
        ``labels`` (R,) long in ``[0, C]`` (``C`` = background) and ``weights`` (R,) float.
    """
    num_rois, num_classes = prev_scores.shape
    labels = prev_scores.new_full((num_rois,), num_classes, dtype=torch.long)
    weights = prev_scores.new_zeros(num_rois)
    if num_rois == 0 or len(image_labels) == 0:
        return labels, weights
    classes = torch.as_tensor(
        sorted(set(image_labels)), dtype=torch.long, device=prev_scores.device
    )
    seed_idx = prev_scores[:, classes].argmax(dim=0)  # (S,)
    seed_scores = prev_scores[seed_idx, classes]  # (S,)
    ious = bbox_overlaps(proposals.float(), proposals[seed_idx].float())  # (R, S)
    max_iou, which = ious.max(dim=1)
    fg = max_iou >= iou_thr
    labels[fg] = classes[which[fg]]
    weights = seed_scores[which].clone()
    weights[max_iou < bg_iou_thr_lo] = 0.0
    return labels, weights


@MODELS.register_module()
class WSODOICRHead(WSODWSDDNHead):
    """WSDDN head + K instance-classifier refinement branches.

    Args:
        num_refine: K refinement branches.
        iou_thr: see :func:`oicr_pseudo_labels`.
        bg_iou_thr_lo: see :func:`oicr_pseudo_labels`.
        refine_loss_weight: weight of each branch's loss.
        test_with_wsddn: average the WSDDN scores into the inference scores.
        test_branches: indices of the refinement branches averaged at inference (default:
            all K, as in the paper); e.g. ``[0]`` to look at one branch.
        **kwargs: :class:`WSODWSDDNHead` arguments.

    Seeds: ``loss(..., seed_scores=...)`` takes per-image (R_i, C) scores of another weak
    detector for the same proposals (``WSODWeakDataset(seed_file=...)``); branch 0 is then
    supervised by them instead of the WSDDN scores (e.g. CAM boxes as OICR's first pseudo
    labels), and the later branches refine as usual.
    """

    accepts_seeds = True

    def __init__(
        self,
        *args,
        num_refine: int = 3,
        iou_thr: float = 0.5,
        bg_iou_thr_lo: float = 0.0,
        refine_loss_weight: float = 1.0,
        test_with_wsddn: bool = False,
        test_branches: list[int] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        if test_branches is not None:
            test_branches = [int(k) for k in test_branches]
            if not test_branches or any(not 0 <= k < num_refine for k in test_branches):
                raise ValueError(
                    f"test_branches={test_branches}: give indices in [0, {num_refine - 1}] "
                    f"(num_refine={num_refine})"
                )
        self.test_branches = test_branches
        self.num_refine = num_refine
        self.iou_thr = iou_thr
        self.bg_iou_thr_lo = bg_iou_thr_lo
        self.refine_loss_weight = refine_loss_weight
        self.test_with_wsddn = test_with_wsddn
        self.fc_refine = nn.ModuleList(
            [init_linear(self.feat_channels, self.num_classes + 1, 0.01) for _ in range(num_refine)]
        )

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """(R, D) -> WSDDN logits + ``"refine"``: list of K (R, C + 1) logits."""
        outs = super().forward(x)
        outs["refine"] = [fc(x) for fc in self.fc_refine]
        return outs

    def loss(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        image_labels: list,
        seed_scores: list[Tensor] | None = None,
    ) -> dict[str, Tensor]:
        """WSDDN's image BCE + one weighted cross-entropy per refinement branch (branch 0
        supervised by ``seed_scores`` when given, else by the WSDDN scores).

        Returns:
            ``{"loss_mil": scalar, "loss_refine0": scalar, ...}``.
        """
        x = self.roi_features(feats, proposals, proposal_scores)
        outs = self.forward(x)
        num_per_img = [len(p) for p in proposals]
        mil = self.mil_scores(outs, num_per_img)
        targets = image_label_targets(image_labels, self.num_classes, device=x.device)
        losses = {"loss_mil": self.mil_loss(mil, targets)}
        prev = [s.detach() for s in (mil if seed_scores is None else seed_scores)]
        for k, logits in enumerate(outs["refine"]):
            per_img = logits.split(num_per_img)
            total = logits.new_zeros(())
            for boxes, prev_s, lg, labels in zip(
                proposals, prev, per_img, image_labels, strict=True
            ):
                tgt, w = oicr_pseudo_labels(
                    boxes, prev_s, list(labels), self.iou_thr, self.bg_iou_thr_lo
                )
                ce = F.cross_entropy(lg, tgt, reduction="none")
                total = total + (w * ce).sum() / max(len(boxes), 1)
            losses[f"loss_refine{k}"] = self.refine_loss_weight * total / len(proposals)
            prev = [F.softmax(lg.detach(), dim=1)[:, : self.num_classes] for lg in per_img]
        return losses

    def proposal_class_scores(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor] | None = None,
        batch_img_metas: list[dict] | None = None,
    ) -> list[Tensor]:
        """Per image (R_i, C): mean refinement softmax (+ WSDDN scores if configured)."""
        x = self.roi_features(feats, proposals, proposal_scores)
        outs = self.forward(x)
        num_per_img = [len(p) for p in proposals]
        branches = self.test_branches or range(self.num_refine)
        refine = torch.stack(
            [F.softmax(outs["refine"][k], dim=1)[:, : self.num_classes] for k in branches]
        ).mean(dim=0)
        scores = list(refine.split(num_per_img))
        if self.test_with_wsddn:
            mil = self.mil_scores(outs, num_per_img)
            scores = [(r + m) / 2 for r, m in zip(scores, mil, strict=True)]
        return scores
