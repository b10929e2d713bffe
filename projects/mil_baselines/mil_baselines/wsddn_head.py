"""``WSODWSDDNHead``: the two-stream MIL head of WSDDN (Bilen & Vedaldi, CVPR 2016).

For the R proposals of one image, RoI features -> shared fcs -> two linear streams:

* classification ``x_c`` (R, C), softmax over classes;
* detection ``x_d`` (R, C), softmax over the image's proposals.

Proposal scores ``s = softmax_c(x_c) * softmax_r(x_d)`` (R, C); the image score
``phi_c = sum_r s_rc`` clamped to ``(eps, 1 - eps)`` is trained with binary cross-entropy on the
image-level labels. No box ever supervises this head.

Boxes are x1y1x2y2 in the network input's pixels (the resized image) inside the model; at
predict they are rescaled to the original image.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox2roi
from mmengine.model import BaseModule
from mmengine.structures import InstanceData
from torch import Tensor

from wsod.models.roi_heads.common import image_label_targets, nms_detections


def wsddn_proposal_scores(cls_logits: Tensor, det_logits: Tensor) -> Tensor:
    """WSDDN proposal scores of one image.

    Args:
        cls_logits: (R, C) classification-stream logits.
        det_logits: (R, C) detection-stream logits.

    Returns:
        (R, C) ``softmax over C (cls) * softmax over R (det)``; each column sums to <= 1.
    """
    return F.softmax(cls_logits, dim=1) * F.softmax(det_logits, dim=0)


def wsddn_image_scores(proposal_scores: Tensor, eps: float = 1e-6) -> Tensor:
    """(R, C) proposal scores -> (C,) image scores, summed over proposals, in [eps, 1-eps]."""
    return proposal_scores.sum(dim=0).clamp(eps, 1.0 - eps)


def init_linear(in_features: int, out_features: int, std: float) -> nn.Linear:
    fc = nn.Linear(in_features, out_features)
    nn.init.normal_(fc.weight, std=std)
    nn.init.zeros_(fc.bias)
    return fc


@MODELS.register_module()
class WSODWSDDNHead(BaseModule):
    """WSDDN head: RoI extractor + shared fcs + classification / detection streams.

    Args:
        num_classes: C (no background class).
        bbox_roi_extractor: mmdet RoI extractor config (``SingleRoIExtractor`` + ``RoIAlign``).
        in_channels: channels of the pooled feature map.
        roi_feat_size: RoI output size (square).
        fc_channels: widths of the shared fcs (VGG16: (4096, 4096) = fc6, fc7).
        dropout: dropout after each shared fc.
        proposal_score_weight: WSDDN's box-score scaling: pooled features of a proposal are
            multiplied by ``1 + w * s`` with ``s`` its proposal score min-max normalised per
            image (0 = off).
        pretrained_fcs: e.g. ``'torchvision://vgg16'``: copy ``classifier.0`` / ``classifier.3``
            of that checkpoint into the two shared fcs (needs ``fc_channels=(4096, 4096)``,
            ``in_channels=512``, ``roi_feat_size=7``).
        eps: clamp of the image scores.
        loss_weight: weight of the image-level BCE.
        test_cfg: ``score_thr``, ``nms`` (mmcv nms config), ``max_per_img``.
    """

    def __init__(
        self,
        num_classes: int,
        bbox_roi_extractor: dict,
        in_channels: int = 96,
        roi_feat_size: int = 7,
        fc_channels: tuple = (512, 512),
        dropout: float = 0.5,
        proposal_score_weight: float = 0.0,
        pretrained_fcs: str | None = None,
        eps: float = 1e-6,
        loss_weight: float = 1.0,
        test_cfg: dict | None = None,
        init_cfg: dict | None = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        self.num_classes = num_classes
        self.bbox_roi_extractor = MODELS.build(bbox_roi_extractor)
        self.proposal_score_weight = proposal_score_weight
        self.pretrained_fcs = pretrained_fcs
        self.eps = eps
        self.loss_weight = loss_weight
        self.test_cfg = dict(
            score_thr=1e-4, nms=dict(type="nms", iou_threshold=0.3), max_per_img=100
        )
        self.test_cfg.update(test_cfg or {})
        layers: list[nn.Module] = []
        width = in_channels * roi_feat_size * roi_feat_size
        for ch in fc_channels:
            # Sequential indices 0,3 (fc), 1,4 (relu), 2,5 (dropout) match torchvision's VGG
            # ``classifier`` so its fc6/fc7 weights load by index
            layers += [nn.Linear(width, ch), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            width = ch
        self.shared_fcs = nn.Sequential(*layers)
        self.feat_channels = width
        self.fc_cls = init_linear(width, num_classes, 0.01)
        self.fc_det = init_linear(width, num_classes, 0.01)

    # ----------------------------------------------------------------------- weights
    def init_weights(self) -> None:
        super().init_weights()
        if self.pretrained_fcs:
            from mmengine.runner import CheckpointLoader

            ckpt = CheckpointLoader.load_checkpoint(self.pretrained_fcs, map_location="cpu")
            state = ckpt.get("state_dict", ckpt)
            sub = {
                k[len("classifier.") :]: v
                for k, v in state.items()
                if k.startswith("classifier.") and k.split(".")[1] in ("0", "3")
            }
            self.shared_fcs.load_state_dict(sub, strict=False)

    # ----------------------------------------------------------------------- forward
    def roi_features(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor] | None = None,
    ) -> Tensor:
        """Pooled + shared-fc features of all proposals of the batch.

        Args:
            feats: backbone/neck feature maps, each (B, C_in, H, W).
            proposals: per image (R_i, 4) x1y1x2y2 in input pixels.
            proposal_scores: per image (R_i,) proposal scores (only with box-score scaling).

        Returns:
            (sum R_i, fc_channels[-1]).
        """
        rois = bbox2roi(proposals)
        x = self.bbox_roi_extractor(feats[: self.bbox_roi_extractor.num_inputs], rois)
        if self.proposal_score_weight and proposal_scores is not None:
            scale = torch.cat([self._normalised(s) for s in proposal_scores]).to(x)
            x = x * (1.0 + self.proposal_score_weight * scale).view(-1, 1, 1, 1)
        return self.shared_fcs(x.flatten(1))

    @staticmethod
    def _normalised(s: Tensor) -> Tensor:
        s = s.float()
        span = s.max() - s.min() if s.numel() else s.new_tensor(0.0)
        return (s - s.min()) / span if span > 0 else torch.zeros_like(s)

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """(R, D) shared features -> ``{"cls": (R, C), "det": (R, C)}`` logits."""
        return {"cls": self.fc_cls(x), "det": self.fc_det(x)}

    def mil_scores(self, outs: dict[str, Tensor], num_per_img: list[int]) -> list[Tensor]:
        """Per image (R_i, C) WSDDN proposal scores (detection softmax within each image)."""
        cls = outs["cls"].split(num_per_img)
        det = outs["det"].split(num_per_img)
        return [wsddn_proposal_scores(c, d) for c, d in zip(cls, det, strict=True)]

    # ----------------------------------------------------------------------- train
    def mil_loss(self, scores: list[Tensor], targets: Tensor) -> Tensor:
        """Mean over images and classes of BCE(image score, image label)."""
        img_scores = torch.stack([wsddn_image_scores(s, self.eps) for s in scores])
        return self.loss_weight * F.binary_cross_entropy(img_scores, targets)

    def loss(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        image_labels: list,
    ) -> dict[str, Tensor]:
        """Image-level BCE of WSDDN.

        Args:
            feats: feature maps (B, C_in, H, W).
            proposals: per image (R_i, 4) x1y1x2y2 (input pixels).
            proposal_scores: per image (R_i,).
            image_labels: per image, the present 0-based class indices.

        Returns:
            ``{"loss_mil": scalar}``.
        """
        x = self.roi_features(feats, proposals, proposal_scores)
        outs = self.forward(x)
        scores = self.mil_scores(outs, [len(p) for p in proposals])
        targets = image_label_targets(image_labels, self.num_classes, device=x.device)
        return {"loss_mil": self.mil_loss(scores, targets)}

    # ----------------------------------------------------------------------- test
    def proposal_class_scores(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor] | None = None,
        batch_img_metas: list[dict] | None = None,
    ) -> list[Tensor]:
        """Per image (R_i, C) scores used for detection (WSDDN: the MIL scores).

        ``batch_img_metas`` is accepted for the common head interface and unused."""
        x = self.roi_features(feats, proposals, proposal_scores)
        return self.mil_scores(self.forward(x), [len(p) for p in proposals])

    def predict(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        batch_img_metas: list[dict],
        rescale: bool = True,
    ) -> list[InstanceData]:
        """Detections per image after per-class NMS.

        Returns:
            per image ``InstanceData(bboxes (k,4) x1y1x2y2, scores (k,), labels (k,))``; boxes
            in original-image pixels when ``rescale``.
        """
        scores = self.proposal_class_scores(feats, proposals, proposal_scores)
        return [
            self._nms(b, s, meta, rescale)
            for b, s, meta in zip(proposals, scores, batch_img_metas, strict=True)
        ]

    def _nms(self, bboxes: Tensor, scores: Tensor, meta: dict, rescale: bool) -> InstanceData:
        return nms_detections(bboxes, scores, meta, rescale, self.test_cfg)
