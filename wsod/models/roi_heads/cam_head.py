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
An optional instance branch (``instance``, :mod:`~wsod.models.roi_heads.instance_branch`: IRN's
displacement field and class boundaries) trains in the same phase; ``scoring=dict(type=
'instances')`` cuts each class region into instance masks with it and boxes each one
(``'components'``: one box per connected component, no branch needed;
:mod:`~wsod.models.roi_heads.cam_instances`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.registry import MODELS
from mmengine.model import BaseModule
from mmengine.structures import InstanceData
from torch import Tensor

from ..mixed_precision import fp32_method
from .affinity import AFFINITY_DEFAULTS, AFFINITY_KEYS, AffinityBranch, affinity_phase_loss
from .cam_instances import class_groups, follow_field, score_by_groups
from .cam_scoring import GROUP_SCORINGS, check_scoring, score_boxes
from .cam_walks import check_refine, walk
from .common import image_label_targets, nms_detections
from .instance_branch import (
    INSTANCE_DEFAULTS,
    INSTANCE_KEYS,
    instance_branch,
    instance_phase_loss,
    split_outputs,
)


def _branch_options(name: str, cfg: dict | None, keys, defaults: dict) -> dict | None:
    """A branch's options with their defaults (None: no branch); unknown or missing keys
    are refused."""
    if not cfg:
        return None
    unknown = set(cfg) - set(keys)
    if unknown:
        raise ValueError(
            f"WSODCAMHead {name}: unknown keys {sorted(unknown)}; known: {', '.join(keys)}"
        )
    if not {"in_indices", "in_channels"} <= set(cfg):
        raise ValueError(f"WSODCAMHead {name}: in_indices and in_channels are required")
    return {**defaults, **cfg}


def _affinity_options(cfg: dict | None) -> dict | None:
    return _branch_options("affinity", cfg, AFFINITY_KEYS, AFFINITY_DEFAULTS)


def _instance_options(cfg: dict | None) -> dict | None:
    return _branch_options("instance", cfg, INSTANCE_KEYS, INSTANCE_DEFAULTS)


def _check_grouping(scoring: dict, has_instance: bool) -> None:
    if scoring["type"] == "instances" and not has_instance:
        raise ValueError(
            "WSODCAMHead scoring.type='instances' needs the instance branch: set "
            "model.roi_head.instance (and train it, WSODAffinityPhaseHook), or use "
            "scoring.type='components'"
        )


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
        instance: ``dict(in_indices, in_channels, stride=8, channels=64, seed_hi=0.3,
            seed_lo=0.05, dilations=(1, 2, 3, 4, 6, 8), loss_weight=1.0)``: IRN's displacement
            field and class-boundary map (:mod:`~wsod.models.roi_heads.instance_branch`),
            trained in the same phase as ``affinity`` (either branch alone, or both); scoring
            ``instances`` reads it. None: no branch.
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
        scoring = check_scoring(cfg.get("scoring"))
        check_refine(cfg.get("refine"), _affinity_options(cfg.get("affinity")) is not None)
        _check_grouping(scoring, _instance_options(cfg.get("instance")) is not None)

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
        instance: dict | None = None,
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
        self.instance_cfg = _instance_options(instance)
        _check_grouping(self.scoring, self.instance_cfg is not None)
        self.instance = None
        if self.instance_cfg is not None:
            self.instance = instance_branch(self.instance_cfg)
            self.register_buffer("instance_steps", torch.zeros((), dtype=torch.long))
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
        affinity phase (``train_affinity``) the affinity and instance branches' losses alone."""
        if self.train_affinity:
            return self._phase_loss(feats, image_labels, batch_img_metas)
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

    def _phase_loss(
        self, feats: tuple[Tensor], image_labels: list, batch_img_metas: list[dict] | None
    ) -> dict[str, Tensor]:
        """The branches' losses against this head's CAM seeds (the classifier without dropout,
        no gradient; :func:`~wsod.models.roi_heads.affinity.affinity_phase_loss`,
        :func:`~wsod.models.roi_heads.instance_branch.instance_phase_loss`)."""
        if self.affinity is None and self.instance is None:
            raise ValueError(
                "WSODCAMHead.train_affinity is set but the head has no affinity or instance branch"
            )
        with torch.no_grad():
            cams = self.fc_cls(feats[self.in_index])
        losses = {}
        for branch, cfg, phase_loss, steps in (
            (self.affinity, self.affinity_cfg, affinity_phase_loss, "affinity_steps"),
            (self.instance, self.instance_cfg, instance_phase_loss, "instance_steps"),
        ):
            if branch is None:
                continue
            size = self._score_size(cams, int(cfg["stride"]))
            with torch.no_grad():
                maps = F.relu(F.interpolate(cams, size=size, mode="bilinear", align_corners=False))
            out = branch(feats, size)
            losses.update(phase_loss(out, maps, image_labels, cfg, batch_img_metas))
            getattr(self, steps).add_(1)
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

    def _check_can_group(self) -> None:
        if self.scoring["type"] == "instances" and int(self.instance_steps) == 0:
            raise ValueError(
                "WSODCAMHead scoring.type='instances': the instance branch was never trained "
                "(instance_steps is 0 in this checkpoint); train it with WSODAffinityPhaseHook "
                "or use scoring.type='components'"
            )

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
        (B, 3, H, W) inputs, needed by the colour walk). The group scorings score the
        proposals alone here (test-time augmentation averages these); ``predict`` adds the
        mask boxes."""
        return [s for _, s in self._scored(feats, proposals, batch_img_metas, images, False)]

    @fp32_method
    def _scored(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        batch_img_metas: list[dict] | None,
        images: Tensor | None,
        add_mask_boxes: bool,
    ) -> list[tuple[Tensor, Tensor]]:
        """Per image the boxes (its proposals, then with ``add_mask_boxes`` and a group
        scoring the boxes of its class regions' groups; input pixels) and their (R_i, C)
        scores."""
        kind = self._check_can_walk(images)
        grouped = self.scoring["type"] in GROUP_SCORINGS
        if grouped:
            self._check_can_group()
        cams = self.forward(feats)
        probs = torch.sigmoid(cams.mean(dim=(2, 3)))  # (B, C)
        scale = self.upsample  # map pixels are ``upsample`` input pixels
        maps = F.relu(
            F.interpolate(cams, size=self._score_size(cams), mode="bilinear", align_corners=False)
        )
        branch_out = {}  # the branches' outputs, each at 1/its stride of the input
        if kind == "learned":
            branch_out["affinity"] = self.affinity(
                feats, self._score_size(cams, self._stride("affinity"))
            )
        if self.scoring["type"] == "instances":
            branch_out["instance"] = self.instance(
                feats, self._score_size(cams, self._stride("instance"))
            )
        out = []
        for i, boxes in enumerate(proposals):
            cam = maps[i]
            own = {k: v[i] for k, v in branch_out.items()}
            h, w = images.shape[-2:] if images is not None else (None, None)
            if batch_img_metas is not None:  # drop the padding
                h, w = batch_img_metas[i]["img_shape"][:2]
                cam = cam[:, : max(1, round(h / scale)), : max(1, round(w / scale))]
                for k, v in own.items():
                    st = self._stride(k)
                    own[k] = v[:, : max(1, round(h / st)), : max(1, round(w / st))]
            if kind is not None:
                image = images[i, :, :h, :w] if images is not None else None
                cam = walk(cam, self.refine, probs[i], image, own.get("affinity"))
            cam = cam / cam.flatten(1).max(dim=1).values.clamp(min=1e-6)[:, None, None]
            if not grouped:
                out.append((boxes, score_boxes(cam, boxes / scale, self.scoring) * probs[i]))
                continue
            mask_boxes, scores = self.grouped_scores(
                cam, boxes / scale, own.get("instance"), probs[i]
            )
            if add_mask_boxes:
                boxes = torch.cat([boxes, mask_boxes * scale])
            else:
                scores = scores[: len(boxes)]
            out.append((boxes, scores * probs[i]))
        return out

    def _stride(self, branch: str) -> int:
        return int((self.affinity_cfg if branch == "affinity" else self.instance_cfg)["stride"])

    def grouped_scores(
        self, cam: Tensor, boxes: Tensor, instance_out: Tensor | None, probs: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """One image's mask boxes and (R + E, C) group scores (map pixels;
        :func:`~wsod.models.roi_heads.cam_instances.score_by_groups`): the instance branch's
        field (and boundaries) upsampled to ``cam``'s size and rescaled to its pixels. With
        ``probs`` (C,) only the classes of probability >= ``scoring['min_prob']`` are grouped;
        every box scores the others by ``thresholded`` at the same ``thr``."""
        opts = self.scoring
        size = cam.shape[-2:]
        kw = {}
        if instance_out is not None:
            disp, bound = split_outputs(instance_out[None].detach())  # grouping: no gradient
            ratio = self._stride("instance") / self.upsample
            field = F.interpolate(disp, size=size, mode="bilinear", align_corners=False)[0] * ratio
            boundary = F.interpolate(
                bound[:, None], size=size, mode="bilinear", align_corners=False
            )
            kw = dict(
                field=field,
                centroid_thr=float(opts["centroid_thr"]) / self.upsample,
                iters=int(opts["iters"]),
                boundary=boundary[0, 0],
                boundary_thr=float(opts["boundary_thr"]),
                landed=follow_field(field, int(opts["iters"])),
            )
        min_area = int(float(opts["min_area"]) * size[0] * size[1])
        thr = float(opts["thr"])
        grouped = torch.ones(len(cam), dtype=torch.bool, device=cam.device)
        if probs is not None:
            grouped = probs >= float(opts["min_prob"])
        none = np.zeros(tuple(size), np.int64)  # a class left ungrouped: no group of its own
        groups = [
            class_groups(c, thr, min_area, **kw) if g else none
            for c, g in zip(cam, grouped.tolist(), strict=True)
        ]
        mask_boxes, scores = score_by_groups(cam, boxes, thr, groups)
        if not grouped.all():
            every = torch.cat([boxes, mask_boxes])
            plain = score_boxes(cam[~grouped], every, {"type": "thresholded", "thr": thr})
            scores[:, ~grouped] = plain.to(scores)
        return mask_boxes, scores

    def predict(
        self,
        feats: tuple[Tensor],
        proposals: list[Tensor],
        proposal_scores: list[Tensor],
        batch_img_metas: list[dict],
        rescale: bool = True,
        images: Tensor | None = None,
    ) -> list[InstanceData]:
        scored = self._scored(feats, proposals, batch_img_metas, images, True)
        return [
            nms_detections(b, s, meta, rescale, self.test_cfg)
            for (b, s), meta in zip(scored, batch_img_metas, strict=True)
        ]
