"""``WSODCAMHead``: a multi-label image classifier whose class activation maps score proposals.

The cheap CPU black box. Training: a 1x1 convolution (= a linear classifier applied at every
position) on the last feature map, global average pooling, binary cross-entropy on the image
labels (CAM, Zhou et al. 2016). No proposal is involved in training.

Prediction: the CAM (ReLU of the class map, upsampled to 1/``upsample`` of the input), walked
first when ``refine`` is set (:mod:`~wsod.models.roi_heads.cam_walks`), divided by its maximum,
scores each proposal (``scoring``, :mod:`~wsod.models.roi_heads.cam_scoring`); the scores are
multiplied by the class probability ``sigmoid(image logit)``; then per-class NMS. Boxes are
x1y1x2y2 in input pixels inside the model.

An optional affinity branch (``affinity``, :mod:`~wsod.models.roi_heads.affinity`) learns
which neighbouring pixels belong together from the classifier's own seeds once
``WSODAffinityPhaseHook`` switches the head to it; ``refine=dict(type='learned')`` walks on it.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.registry import MODELS
from mmengine.model import BaseModule
from mmengine.structures import InstanceData
from torch import Tensor

from ..mixed_precision import fp32_method
from .affinity import AFFINITY_DEFAULTS, AFFINITY_KEYS, AffinityBranch, affinity_phase_loss
from .cam_scoring import check_scoring, score_boxes
from .cam_walks import check_refine, walk
from .common import image_label_targets, nms_detections


def _affinity_options(cfg: dict | None) -> dict | None:
    """The affinity options with their defaults (None: no branch); unknown or missing keys
    are refused."""
    if not cfg:
        return None
    unknown = set(cfg) - set(AFFINITY_KEYS)
    if unknown:
        raise ValueError(
            f"WSODCAMHead affinity: unknown keys {sorted(unknown)}; known: "
            f"{', '.join(AFFINITY_KEYS)}"
        )
    if not {"in_indices", "in_channels"} <= set(cfg):
        raise ValueError("WSODCAMHead affinity: in_indices and in_channels are required")
    return {**AFFINITY_DEFAULTS, **cfg}


@MODELS.register_module()
class WSODCAMHead(BaseModule):
    """Multi-label classifier on one feature map; its CAMs score proposals at test time.

    Args:
        num_classes: C.
        in_channels: channels of the feature map used (``feats[in_index]``).
        featmap_stride: its stride (to map proposals onto it).
        in_index: which backbone output to use.
        dropout: dropout on the feature map before the classifier.
        scoring: how a box is scored, ``dict(type='mass_minus_area', area_weight=1.0)``,
            ``dict(type='thresholded', thr=0.2)`` or ``dict(type='image')``
            (:mod:`~wsod.models.roi_heads.cam_scoring`).
        upsample: CAMs are scored at 1/``upsample`` of the input resolution (bilinear).
        refine: the walk before scoring, ``dict(type='colour', iters=10, dilations=(1, 2, 4,
            8, 12, 24), sigma=0.1, min_prob=0.0)`` or ``dict(type='learned', iters, dilations,
            beta=8.0, min_prob)`` (:mod:`~wsod.models.roi_heads.cam_walks`); None: no walk.
        affinity: ``dict(in_indices, in_channels, stride=4, channels=64, embed_channels=32,
            seed_hi=0.5, seed_lo=0.1, dilations=(1, 2, 4, 8, 12, 24), loss_weight=1.0)``: an
            :class:`~wsod.models.roi_heads.affinity.AffinityBranch` on the backbone outputs
            ``in_indices`` with its embedding at 1/``stride`` of the input, trained from this
            head's CAM seeds (labelled class >= ``seed_hi`` x its maximum, background <
            ``seed_lo``; pairs at ``dilations``) once ``WSODAffinityPhaseHook`` switches the
            head to it (``train_affinity``): then the loss is the affinity loss alone and the
            classifier is frozen. None: no branch.
        test_cfg: ``score_thr``, ``nms``, ``max_per_img``.
    """

    # used at inference only: left out of the training run's fingerprint, so changing them
    # (``--cfg-options``, a pipeline edit) detects again with the same checkpoint
    TEST_TIME_ARGS = ("scoring", "upsample", "refine")

    @staticmethod
    def check_cfg(cfg: dict) -> None:
        """Refuse this head's config dict as ``__init__`` would (``scoring``, ``refine``,
        ``affinity``), without building it: the pipeline check calls ``check_cfg`` of every
        registered class its configs name, before any stage runs.

        Raises:
            ValueError: naming the wrong key or value.
        """
        check_scoring(cfg.get("scoring"))
        check_refine(cfg.get("refine"), _affinity_options(cfg.get("affinity")) is not None)

    def __init__(
        self,
        num_classes: int,
        in_channels: int = 1280,
        featmap_stride: int = 32,
        in_index: int = -1,
        dropout: float = 0.0,
        scoring: dict | None = None,
        upsample: int = 4,
        refine: dict | None = None,
        affinity: dict | None = None,
        test_cfg: dict | None = None,
        init_cfg: dict | None = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        self.num_classes = num_classes
        self.featmap_stride = featmap_stride
        self.in_index = in_index
        self.scoring = check_scoring(scoring)
        self.upsample = upsample
        self.affinity_cfg = _affinity_options(affinity)
        self.refine = check_refine(refine, self.affinity_cfg is not None)
        self.affinity = None
        if self.affinity_cfg is not None:
            cfg = self.affinity_cfg
            self.affinity = AffinityBranch(
                cfg["in_indices"], cfg["in_channels"], cfg["channels"], cfg["embed_channels"]
            )
            # affinity training steps taken, saved with the weights: refining with an untrained
            # branch is refused instead of walking on random affinities
            self.register_buffer("affinity_steps", torch.zeros((), dtype=torch.long))
        self.train_affinity = False  # set by WSODAffinityPhaseHook
        self.dropout = nn.Dropout2d(dropout) if dropout else nn.Identity()
        self.fc_cls = nn.Conv2d(in_channels, num_classes, 1)
        nn.init.normal_(self.fc_cls.weight, std=0.01)
        nn.init.zeros_(self.fc_cls.bias)
        self.test_cfg = dict(
            score_thr=1e-3, nms=dict(type="nms", iou_threshold=0.3), max_per_img=100
        )
        self.test_cfg.update(test_cfg or {})

    def forward(self, feats: tuple[Tensor]) -> Tensor:
        """Feature maps -> (B, C, h, w) class activation maps (logits at each position)."""
        return self.fc_cls(self.dropout(feats[self.in_index]))

    def loss(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        image_labels: list,
        batch_img_metas: list[dict] | None = None,
    ) -> dict[str, Tensor]:
        """BCE on image labels of the globally average-pooled CAMs (proposals unused); in the
        affinity phase (``train_affinity``) the affinity loss alone."""
        if self.train_affinity:
            return self._affinity_loss(feats, image_labels, batch_img_metas)
        logits = self.forward(feats).mean(dim=(2, 3))
        targets = image_label_targets(image_labels, self.num_classes, device=logits.device)
        return {"loss_cls": F.binary_cross_entropy_with_logits(logits, targets)}

    def _score_size(self, cams: Tensor, stride: int | None = None) -> tuple[int, int]:
        """(h, w) of the maps at 1/``stride`` of the (padded) input (default: ``upsample``,
        where boxes are scored)."""
        stride = stride or self.upsample
        return (
            cams.shape[2] * self.featmap_stride // stride,
            cams.shape[3] * self.featmap_stride // stride,
        )

    def _affinity_loss(
        self, feats: tuple[Tensor], image_labels: list, batch_img_metas: list[dict] | None
    ) -> dict[str, Tensor]:
        """The affinity branch's loss against this head's CAM seeds (the classifier without
        dropout, no gradient; :func:`~wsod.models.roi_heads.affinity.affinity_phase_loss`)."""
        if self.affinity is None:
            raise ValueError(
                "WSODCAMHead.train_affinity is set but the head has no affinity branch"
            )
        with torch.no_grad():
            cams = self.fc_cls(feats[self.in_index])
            size = self._score_size(cams, int(self.affinity_cfg["stride"]))
            maps = F.relu(F.interpolate(cams, size=size, mode="bilinear", align_corners=False))
        embedding = self.affinity(feats, size)
        losses = affinity_phase_loss(
            embedding, maps, image_labels, self.affinity_cfg, batch_img_metas
        )
        self.affinity_steps += 1
        return losses

    def _check_can_walk(self, images: Tensor | None) -> str | None:
        """The walk to take before scoring (None: none), refused when its inputs are missing."""
        if not self.refine or self.scoring["type"] == "image":  # 'image' ignores the maps
            return None
        kind = self.refine["type"]
        if kind == "colour" and images is None:
            raise ValueError("WSODCAMHead with refine needs the input images to score boxes")
        if kind == "learned" and int(self.affinity_steps) == 0:
            raise ValueError(
                "WSODCAMHead refine.type='learned': the affinity branch was never trained "
                "(affinity_steps is 0 in this checkpoint); train it with WSODAffinityPhaseHook "
                "or use type='colour'"
            )
        return kind

    @fp32_method  # scores, walks and box sums in fp32 under autocast (mixed_precision.py)
    def proposal_class_scores(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor] | None = None,
        batch_img_metas: list[dict] | None = None,
        images: Tensor | None = None,
    ) -> list[Tensor]:
        """Per image (R_i, C) CAM box scores times class probabilities (``images``: the
        (B, 3, H, W) inputs, needed by the colour walk)."""
        kind = self._check_can_walk(images)
        cams = self.forward(feats)
        probs = torch.sigmoid(cams.mean(dim=(2, 3)))  # (B, C)
        scale = self.upsample  # map pixels are ``upsample`` input pixels
        maps = F.relu(
            F.interpolate(cams, size=self._score_size(cams), mode="bilinear", align_corners=False)
        )
        embedding, stride = None, None
        if kind == "learned":  # the embedding (and the walk) at 1/stride of the input
            stride = int(self.affinity_cfg["stride"])
            embedding = self.affinity(feats, self._score_size(cams, stride))
        out = []
        for i, boxes in enumerate(proposals):
            cam = maps[i]
            emb = embedding[i] if embedding is not None else None
            h, w = images.shape[-2:] if images is not None else (None, None)
            if batch_img_metas is not None:  # drop the padding
                h, w = batch_img_metas[i]["img_shape"][:2]
                cam = cam[:, : max(1, round(h / scale)), : max(1, round(w / scale))]
                if emb is not None:
                    emb = emb[:, : max(1, round(h / stride)), : max(1, round(w / stride))]
            if kind is not None:
                image = images[i, :, :h, :w] if images is not None else None
                cam = walk(cam, self.refine, probs[i], image, emb)
            cam = cam / cam.flatten(1).max(dim=1).values.clamp(min=1e-6)[:, None, None]
            out.append(score_boxes(cam, boxes / scale, self.scoring) * probs[i])
        return out

    def predict(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        batch_img_metas: list[dict],
        rescale: bool = True,
        images: Tensor | None = None,
    ) -> list[InstanceData]:
        scores = self.proposal_class_scores(
            feats, proposals, proposal_scores, batch_img_metas, images=images
        )
        return [
            nms_detections(b, s, meta, rescale, self.test_cfg)
            for b, s, meta in zip(proposals, scores, batch_img_metas, strict=True)
        ]
