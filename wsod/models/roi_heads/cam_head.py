"""``WSODCAMHead``: a multi-label image classifier whose class activation maps score proposals.

The cheap CPU black box. Training: a 1x1 convolution (= a linear classifier applied at every
position) on the last feature map, global average pooling, binary cross-entropy on the image
labels (CAM, Zhou et al. 2016). No proposal is involved in training.

Prediction: for every class, the CAM (ReLU of the class map, upsampled to the input and
divided by its maximum) scores each proposal by how much of the activation it holds for how
much of the image it covers::

    mass_minus_area:  score = mass_in / mass_total - a x area_box / area_image
    mean_in_out:      score = mean CAM inside - mean CAM outside
    context:          score = (mean CAM inside - mean CAM in the frame around the box)
                              x (mass_in / mass_total) ** m
    thresholded:      score = sum over the box of (CAM - t) / sum over the image of max(CAM - t, 0)
    image:            score = 1 (every box gets the class probability alone)

Scores are clipped at 0 and multiplied by the class probability ``sigmoid(image logit)``; then
per-class NMS. ``image`` with one whole-image proposal per image (``wsod proposals --method
whole_image``) turns the black box into its image classifier: one box per class scoring the
class probability, the image-level confidence ``wsod rescore`` can multiply another detector's
scores by without proposals at test time. Sums over boxes use a summed-area table, so 1000
proposals x 20 classes cost a few ms. Boxes are x1y1x2y2 in input pixels inside the model.

``context`` is the contrastive context score of ContextLocNet (Kantorov et al. 2016) on the CAM:
the frame is the box enlarged ``context_ratio`` times (width and height) minus the box, with
the image outside counted as no activation. A box around one of several separate instances
keeps a dark frame; a box spanning two of them takes in the dark gap between them, and a part
of an object has the rest of the object in its frame. The contrast alone (``m = 0``,
``context_mass``) favours small boxes on a peak; ``m = 2`` brings whole objects back (VOC:
docs/experiments/2026-12-04-cam-context-score.md).

``thresholded`` is the proposal form of the usual "threshold the CAM at t x its maximum and box
the region" rule: it is 1 for a box holding exactly the pixels above ``t`` and loses what the
box leaves out and what it adds below ``t``. ``a`` (``area_weight``, default 1) trades mass
for tightness. On VOC the top boxes at ``a = 1`` are often too large, but a larger ``a`` shrinks
them onto parts rather than whole objects (docs/experiments/2026-12-03-weak-test-time-settings.md).
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
from .affinity import (
    BACKGROUND,
    IGNORE,
    AffinityBranch,
    affinity_loss,
    affinity_targets,
    cam_seeds,
    predicted_affinities,
    transition_weights,
)
from .cam_refine import propagate, refine_cams
from .wsddn_head import image_label_targets, nms_detections


def summed_area(maps: Tensor) -> Tensor:
    """(C, H, W) maps -> their (C, H + 1, W + 1) summed-area tables (zero first row/column),
    for :func:`box_sums`."""
    return F.pad(maps.cumsum(1).cumsum(2), (1, 0, 1, 0))


def box_sums(integral: Tensor, boxes: Tensor) -> Tensor:
    """Sums of maps inside boxes from a summed-area table.

    Args:
        integral: (C, H + 1, W + 1) summed-area table (zero first row/column).
        boxes: (R, 4) x1y1x2y2 in map pixels (rounded and clipped here).

    Returns:
        (R, C) sums.
    """
    h, w = integral.shape[1] - 1, integral.shape[2] - 1
    b = boxes.round().long()
    x1, x2 = b[:, 0].clamp(0, w), b[:, 2].clamp(0, w)
    y1, y2 = b[:, 1].clamp(0, h), b[:, 3].clamp(0, h)
    s = integral[:, y2, x2] - integral[:, y1, x2] - integral[:, y2, x1] + integral[:, y1, x1]
    return s.t()


def cam_zones(cam: Tensor, thr: float, min_share: float = 0.05) -> Tensor | None:
    """Split one map into the zones of influence of its separate activated regions.

    The regions are the 8-connected components of ``cam > thr`` holding at least ``min_share``
    of the map's mass above ``thr``; every pixel belongs to the zone of the nearest region.

    Args:
        cam: (H, W) non-negative map.
        thr: activation above which a pixel belongs to a region.
        min_share: smaller regions are ignored (they join their neighbours' zones).

    Returns:
        (H, W) long zone index 0..K-1, or None when there are fewer than two regions.
    """
    import numpy as np
    from scipy import ndimage

    a, thr = cam.detach().cpu().numpy(), float(thr)
    regions, n = ndimage.label(a > thr, structure=np.ones((3, 3), bool))
    if n < 2:
        return None
    mass = ndimage.sum(np.clip(a - thr, 0, None), regions, index=np.arange(1, n + 1))
    keep = np.flatnonzero(mass >= min_share * mass.sum()) + 1
    if len(keep) < 2:
        return None
    lut = np.zeros(n + 1, np.int64)
    lut[keep] = np.arange(1, len(keep) + 1)
    regions = lut[regions]
    _, (iy, ix) = ndimage.distance_transform_edt(regions == 0, return_indices=True)
    return torch.from_numpy(regions[iy, ix] - 1).to(cam.device)


def instance_walk(
    maps: Tensor,
    weights: Tensor,
    dilations: tuple[int, ...],
    iters: int,
    thr: float,
    min_share: float = 0.05,
) -> tuple[Tensor, dict[int, Tensor]]:
    """Walk each class map in pieces, one per separate region of the map before the walk.

    The walk of a whole map joins two touching instances of a class: their seeds are the same
    class, so the learned affinities link them. Before the walk their cores may still be apart:
    each region of ``maps[k]`` above ``thr`` x its maximum (:func:`cam_zones`) seeds one piece
    (the map inside that region's zone of influence), the pieces walk separately and every pixel
    belongs to the piece whose walk reaches it most (a seeded random-walker segmentation). The
    walk is linear, so the pieces add up to the walk of the whole map.

    Args:
        maps: (C, h, w) non-negative maps at the walk's resolution.
        weights: (1, K, h, w) row-stochastic transition weights (:func:`propagate`).
        dilations: the weights' neighbour distances.
        iters: walk steps.
        thr: regions above this fraction of a map's maximum seed the pieces.
        min_share: smaller regions join their neighbours' zones (:func:`cam_zones`).

    Returns:
        (C, h, w) walked maps and, for each class with at least two pieces, its (h, w) instance
        index per pixel.
    """
    pieces, owner, split = [], [], {}
    for k, m in enumerate(maps):
        peak = float(m.max())
        zones = cam_zones(m, thr * peak, min_share) if peak > 0 else None
        if zones is None:
            pieces.append(m[None])
            owner.append(k)
            continue
        one_hot = F.one_hot(zones, int(zones.max()) + 1).permute(2, 0, 1).to(m.dtype)
        split[k] = (len(owner), len(one_hot))  # its pieces' rows in the walk
        pieces.append(m[None] * one_hot)
        owner.extend([k] * len(one_hot))
    walked = propagate(torch.cat(pieces)[None], weights, dilations, iters)[0]
    summed = torch.zeros_like(maps).index_add_(0, torch.tensor(owner, device=maps.device), walked)
    return summed, {k: walked[s : s + n].argmax(0) for k, (s, n) in split.items()}


def _class_zones(
    cam: Tensor, k: int, thr: float, min_zone_share: float, given: dict[int, Tensor] | None
) -> Tensor | None:
    """Class ``k``'s zones: ``given[k]`` when zones are given, else its map's own separate
    regions above ``thr`` (:func:`cam_zones`); None: not split."""
    if given is not None:
        return given.get(k)
    return cam_zones(cam[k], thr, min_zone_share)


def _best_zone_scores(
    score: Tensor,
    cam: Tensor,
    boxes: Tensor,
    total: Tensor,
    penalty: Tensor,
    area_weight: float,
    min_zone_share: float,
    given: dict[int, Tensor] | None = None,
) -> None:
    """``split_zones``: per class, the box's best score against one zone's mass (in place);
    ``given``: zones per class instead of the map's own regions."""
    c, h, w = cam.shape
    for k in range(c):
        zones = _class_zones(cam, k, area_weight * float(total[k]) / (h * w), min_zone_share, given)
        if zones is None:
            continue
        masked = cam[k][None] * F.one_hot(zones, int(zones.max()) + 1).permute(2, 0, 1)
        per_zone = box_sums(summed_area(masked), boxes) / total[k] - penalty  # (R, K)
        score[:, k] = per_zone.max(dim=1).values


def _best_zone_thresholded(
    score: Tensor,
    cam: Tensor,
    boxes: Tensor,
    thr: float,
    min_zone_share: float,
    zone_thr: float | None = None,
    given: dict[int, Tensor] | None = None,
) -> None:
    """``split_zones`` of ``thresholded``: per class with several regions above ``thr``, the
    box's best score against one zone alone, the other zones counting as background (-thr per
    pixel), so a box around two instances pays for the second instead of gaining it (in place);
    ``given``: zones per class instead of the map's own regions."""
    for k in range(cam.shape[0]):
        zones = _class_zones(cam, k, thr if zone_thr is None else zone_thr, min_zone_share, given)
        if zones is None:
            continue
        own = F.one_hot(zones, int(zones.max()) + 1).permute(2, 0, 1).bool()  # (K, H, W)
        per_zone = torch.where(own, cam[k][None] - thr, cam.new_tensor(-thr))
        positive = per_zone.clamp(min=0).flatten(1).sum(1).clamp(min=1e-6)
        score[:, k] = (box_sums(summed_area(per_zone), boxes) / positive).max(dim=1).values


def _context_scores(
    integral: Tensor,
    b: Tensor,
    inside: Tensor,
    area: Tensor,
    total: Tensor,
    context_ratio: float,
    context_mass: float,
) -> Tensor:
    """``context``: mean inside the box minus mean in the frame around it (x mass share^p)."""
    centre = (b[:, :2] + b[:, 2:]) / 2
    half = (b[:, 2:] - b[:, :2]).clamp(min=1) * (context_ratio / 2)
    outer = torch.cat([centre - half, centre + half], dim=1)
    outer_area = (half[:, 0] * half[:, 1] * 4).round()[:, None]  # unclipped: outside = 0
    frame = box_sums(integral, outer) - inside
    score = inside / area.clamp(min=1) - frame / (outer_area - area).clamp(min=1)
    if context_mass:
        score = score * (inside / total).clamp(min=0).pow(context_mass)  # < 0 stays < 0
    return score


def cam_box_scores(
    cam: Tensor,
    boxes: Tensor,
    mode: str = "mass_minus_area",
    thr: float = 0.2,
    area_weight: float = 1.0,
    power: float = 1.0,
    split_zones: bool = False,
    min_zone_share: float = 0.05,
    context_ratio: float = 1.8,
    context_mass: float = 0.0,
    zone_thr: float | None = None,
    zones: dict[int, Tensor] | None = None,
) -> Tensor:
    """Score boxes on normalised CAMs.

    Args:
        cam: (C, H, W) non-negative maps, each divided by its maximum.
        boxes: (R, 4) x1y1x2y2 in map pixels.
        mode: ``mass_minus_area``, ``mean_in_out``, ``context``, ``thresholded`` or ``image``
            (see the module docstring).
        thr: the threshold ``t`` of ``thresholded`` (a fraction of each map's maximum).
        area_weight: ``a`` of ``mass_minus_area``.
        power: maps are raised to this power first (> 1 sharpens the peaks: the blurred halo
            around an object weighs less against the object itself).
        split_zones: ``mass_minus_area``: a map with several separate regions above
            ``a`` x its mean (the pixels the score wants inside a box) is split into their
            zones of influence (:func:`cam_zones`) and a box is scored against each zone's
            mass alone, keeping the best: a box holding one region scores as before, a box
            spanning two regions loses the mass of all but one while paying for its whole area.
            ``thresholded``: the same with the regions above ``t``; the other zones count as
            background for each zone's score.
        min_zone_share: regions with less of the mass above the threshold do not form a zone.
        zone_thr: ``thresholded`` with ``split_zones``: the regions that make the zones are
            the connected parts above this fraction of the maximum (None: ``t``); above ``t``,
            two touching instances are one region, their separate cores may not be.
        zones: {class index: (H, W) zone index} (e.g. :func:`instance_walk`'s instances):
            ``split_zones`` with these zones; classes without an entry are not split.
        context_ratio: ``context`` only: the frame's outer box is the box scaled by this
            factor about its centre.
        context_mass: ``context`` only: the contrast is multiplied by the box's share of the
            map's mass to this power (0: the contrast alone, which favours small boxes on a
            peak).

    Returns:
        (R, C) scores >= 0.
    """
    c, h, w = cam.shape
    if mode == "image":
        return cam.new_ones(len(boxes), c)
    if power != 1.0:
        cam = cam.pow(power)
    if mode == "thresholded":
        shifted = cam - thr
        positive = shifted.clamp(min=0).flatten(1).sum(1).clamp(min=1e-6)  # (C,)
        score = box_sums(summed_area(shifted), boxes) / positive
        if split_zones or zones is not None:
            _best_zone_thresholded(score, cam, boxes, thr, min_zone_share, zone_thr, zones)
        return score.clamp(min=0)
    integral = summed_area(cam)
    inside = box_sums(integral, boxes)  # (R, C)
    total = integral[:, -1, -1].clamp(min=1e-6)  # (C,)
    b = boxes.round().clamp(min=0)
    bw = (b[:, 2].clamp(max=w) - b[:, 0].clamp(max=w)).clamp(min=0)
    bh = (b[:, 3].clamp(max=h) - b[:, 1].clamp(max=h)).clamp(min=0)
    area = (bw * bh)[:, None]
    if mode == "mass_minus_area":
        penalty = area_weight * area / float(h * w)
        score = inside / total - penalty
        if split_zones or zones is not None:
            _best_zone_scores(score, cam, boxes, total, penalty, area_weight, min_zone_share, zones)
    elif mode == "mean_in_out":
        outside = total - inside
        score = inside / area.clamp(min=1) - outside / (h * w - area).clamp(min=1)
    elif mode == "context":
        score = _context_scores(integral, b, inside, area, total, context_ratio, context_mass)
    else:
        raise ValueError(f"unknown CAM box score mode {mode!r}")
    return score.clamp(min=0)


REFINE_KEYS = ("iters", "dilations", "sigma", "min_prob", "source", "beta", "instance_thr")
# the affinity branch's options and their defaults (in_indices and in_channels have none)
AFFINITY_DEFAULTS = dict(
    stride=4,
    channels=64,
    embed_channels=32,
    seed_hi=0.5,
    seed_lo=0.1,
    dilations=(1, 2, 4, 8, 12, 24),
    loss_weight=1.0,
)
AFFINITY_KEYS = ("in_indices", "in_channels", *AFFINITY_DEFAULTS)


def _checked(
    name: str, cfg: dict | None, known: tuple[str, ...], required: tuple[str, ...] = ()
) -> dict | None:
    """A copy of the option dict ``cfg`` (None when empty), refusing keys it does not know and
    missing ``required`` ones."""
    unknown = set(cfg or {}) - set(known)
    if unknown:
        raise ValueError(
            f"WSODCAMHead {name}: unknown keys {sorted(unknown)}; known: {', '.join(known)}"
        )
    if cfg and not set(required) <= set(cfg):
        raise ValueError(f"WSODCAMHead {name}: {' and '.join(required)} are required")
    return dict(cfg) if cfg else None


@MODELS.register_module()
class WSODCAMHead(BaseModule):
    """Multi-label classifier on one feature map; its CAMs score proposals at test time.

    Args:
        num_classes: C.
        in_channels: channels of the feature map used (``feats[in_index]``).
        featmap_stride: its stride (to map proposals onto it).
        in_index: which backbone output to use.
        dropout: dropout on the feature map before the classifier.
        score_mode: ``mass_minus_area``, ``mean_in_out``, ``context``, ``thresholded`` or
            ``image``.
        cam_thr: threshold of ``thresholded`` (fraction of each CAM's maximum).
        area_weight: area penalty of ``mass_minus_area`` (> 1: tighter boxes).
        cam_power: normalised CAMs are raised to this power before scoring (1: as they are).
        split_zones: score boxes against each separate activated region's zone
            (:func:`cam_box_scores`).
        min_zone_share: smaller regions do not form a zone of their own.
        zone_thr: ``thresholded`` zones from the regions above this (None: ``cam_thr``).
        context_ratio: outer size of ``context``'s frame, relative to the box.
        context_mass: ``context``'s contrast x (the box's share of the mass) ** this.
        upsample: CAMs are scored at 1/``upsample`` of the input resolution (bilinear).
        refine: ``dict(iters=10, dilations=(1, 2, 4, 8, 12, 24), sigma=0.1, min_prob=0.0,
            source='colour', beta=8.0)`` to refine the upsampled CAMs by a random walk before
            scoring, only the classes whose probability is at least ``min_prob`` (the others
            score nothing much anyway and cost as much); None: as they are. ``source='colour'``:
            affinities from the input image's colours
            (:func:`~wsod.models.roi_heads.cam_refine.refine_cams`; needs the input images at
            test time, which ``WSODWeakDetector`` passes); ``'learned'``: the trained
            ``affinity`` branch's, raised to ``beta`` (needs ``affinity``). ``instance_thr``
            (learned only): each separate region of a class map above this fraction of its
            maximum walks alone (:func:`instance_walk`) and boxes are scored against each
            instance's pixels, the other instances counting as background (as ``split_zones``).
        affinity: ``dict(in_indices, in_channels, stride=4, channels=64, embed_channels=32,
            seed_hi=0.5, seed_lo=0.1, dilations=(1, 2, 4, 8, 12, 24), loss_weight=1.0)``: an
            :class:`~wsod.models.roi_heads.affinity.AffinityBranch` on the backbone outputs
            ``in_indices`` with its embedding at 1/``stride`` of the input (where the learned
            walk runs: the maps are area-averaged down to it and upsampled back), trained from
            this head's CAM seeds (labelled class >= ``seed_hi`` x its maximum, background <
            ``seed_lo``; pairs at ``dilations``) once
            ``WSODAffinityPhaseHook`` switches the head to it (``train_affinity``): then the
            loss is the affinity loss alone and the classifier is frozen. None: no branch.
        test_cfg: ``score_thr``, ``nms``, ``max_per_img``.
    """

    # used at inference only: left out of the training run's fingerprint, so changing them
    # (``--cfg-options``, a pipeline edit) detects again with the same checkpoint
    TEST_TIME_ARGS = (
        "score_mode",
        "cam_thr",
        "area_weight",
        "cam_power",
        "split_zones",
        "min_zone_share",
        "zone_thr",
        "context_ratio",
        "context_mass",
        "upsample",
        "refine",
    )

    def __init__(
        self,
        num_classes: int,
        in_channels: int = 1280,
        featmap_stride: int = 32,
        in_index: int = -1,
        dropout: float = 0.0,
        score_mode: str = "mass_minus_area",
        cam_thr: float = 0.2,
        area_weight: float = 1.0,
        cam_power: float = 1.0,
        split_zones: bool = False,
        min_zone_share: float = 0.05,
        zone_thr: float | None = None,
        context_ratio: float = 1.8,
        context_mass: float = 0.0,
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
        self.score_mode = score_mode
        self.cam_thr = cam_thr
        self.area_weight = area_weight
        self.cam_power = cam_power
        self.split_zones = split_zones
        self.min_zone_share = min_zone_share
        self.zone_thr = zone_thr
        self.context_ratio = context_ratio
        self.context_mass = context_mass
        self.upsample = upsample
        self.refine = _checked("refine", refine, REFINE_KEYS)
        affinity = _checked("affinity", affinity, AFFINITY_KEYS, ("in_indices", "in_channels"))
        self.affinity_cfg = {**AFFINITY_DEFAULTS, **affinity} if affinity else None
        source = (self.refine or {}).get("source", "colour")
        if source not in ("colour", "learned"):
            raise ValueError(f"WSODCAMHead refine.source={source!r}: use 'colour' or 'learned'")
        if source != "learned" and (self.refine or {}).get("instance_thr") is not None:
            raise ValueError(
                "WSODCAMHead refine.instance_thr splits the learned walk: it needs "
                "refine.source='learned'"
            )
        if source == "learned" and self.affinity_cfg is None:
            raise ValueError(
                "WSODCAMHead refine.source='learned' needs the affinity branch: set "
                "model.roi_head.affinity (and train it, WSODAffinityPhaseHook)"
            )
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
        """AffinityNet's loss of the branch's embedding against this head's CAM seeds (the
        classifier without dropout, no gradient); padding is left unseeded."""
        if self.affinity is None:
            raise ValueError(
                "WSODCAMHead.train_affinity is set but the head has no affinity branch"
            )
        cfg = self.affinity_cfg
        dilations = tuple(int(d) for d in cfg["dilations"])
        stride = int(cfg["stride"])
        with torch.no_grad():
            cams = self.fc_cls(feats[self.in_index])
            size = self._score_size(cams, stride)
            maps = F.relu(F.interpolate(cams, size=size, mode="bilinear", align_corners=False))
        affinities = predicted_affinities(self.affinity(feats, size), dilations)
        losses, fg, bg = [], [], []
        for i, labels in enumerate(image_labels):
            seeds = cam_seeds(maps[i], labels, cfg["seed_hi"], cfg["seed_lo"])
            if batch_img_metas is not None:
                h, w = batch_img_metas[i]["img_shape"][:2]
                seeds[round(h / stride) :] = IGNORE
                seeds[:, round(w / stride) :] = IGNORE
            losses.append(affinity_loss(affinities[i], affinity_targets(seeds, dilations)))
            known = (seeds != IGNORE).sum().clamp(min=1)
            fg.append((seeds > BACKGROUND).sum() / known)
            bg.append((seeds == BACKGROUND).sum() / known)
        self.affinity_steps += 1
        return {
            "loss_affinity": float(cfg["loss_weight"]) * torch.stack(losses).mean(),
            # logged, not optimised: the seeded shares of the image (a phase whose seeds are
            # nearly all background or all foreground teaches little)
            "seed_fg": torch.stack(fg).mean().detach(),
            "seed_bg": torch.stack(bg).mean().detach(),
        }

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
        (B, 3, H, W) inputs, needed with ``refine``)."""
        refine = bool(self.refine) and self.score_mode != "image"  # 'image' ignores the maps
        learned = refine and self.refine.get("source", "colour") == "learned"
        if refine and not learned and images is None:
            raise ValueError("WSODCAMHead with refine needs the input images to score boxes")
        if learned and int(self.affinity_steps) == 0:
            raise ValueError(
                "WSODCAMHead refine.source='learned': the affinity branch was never trained "
                "(affinity_steps is 0 in this checkpoint); train it with WSODAffinityPhaseHook "
                "or use source='colour'"
            )
        cams = self.forward(feats)
        probs = torch.sigmoid(cams.mean(dim=(2, 3)))  # (B, C)
        scale = self.upsample  # map pixels are ``upsample`` input pixels
        size = self._score_size(cams)
        maps = F.relu(F.interpolate(cams, size=size, mode="bilinear", align_corners=False))
        embedding, stride = None, None
        if learned:  # the embedding (and the walk) at 1/stride of the input
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
            zones = None
            if refine:
                image = images[i, :, :h, :w] if images is not None else None
                cam, zones = self._refined(cam, image, probs[i], emb)
            cam = cam / cam.flatten(1).max(dim=1).values.clamp(min=1e-6)[:, None, None]
            box_scores = cam_box_scores(
                cam,
                boxes / scale,
                self.score_mode,
                self.cam_thr,
                self.area_weight,
                self.cam_power,
                self.split_zones,
                self.min_zone_share,
                self.context_ratio,
                self.context_mass,
                self.zone_thr,
                zones or None,
            )
            out.append(box_scores * probs[i])
        return out

    def _refined(
        self, cam: Tensor, image: Tensor | None, probs: Tensor, embedding: Tensor | None
    ) -> tuple[Tensor, dict[int, Tensor]]:
        """``cam`` with the classes of probability >= ``refine['min_prob']`` refined by the
        walk on the image's colours or, given the branch's ``embedding`` (D, h, w), on the
        learned affinities; with ``instance_thr``, also the instances of the classes it split
        ({class index: (H, W) instance index at ``cam``'s size})."""
        opts = dict(self.refine)
        which = probs >= float(opts.pop("min_prob", 0.0))
        source, beta = opts.pop("source", "colour"), float(opts.pop("beta", 8.0))
        instance_thr = opts.pop("instance_thr", None)
        if not which.any():
            return cam, {}
        cam = cam.clone()
        if source == "colour":
            cam[which] = refine_cams(cam[which], image, **opts)
            return cam, {}
        dilations = tuple(int(d) for d in opts.get("dilations", (1, 2, 4, 8, 12, 24)))
        weights = transition_weights(predicted_affinities(embedding[None], dilations), beta)
        small = F.adaptive_avg_pool2d(cam[which][None], embedding.shape[-2:])
        iters = int(opts.get("iters", 10))
        if instance_thr is None:
            walked, instances = propagate(small, weights, dilations, iters), {}
        else:
            walked, instances = instance_walk(
                small[0], weights, dilations, iters, float(instance_thr), self.min_zone_share
            )
            walked = walked[None]
        size = cam.shape[-2:]
        cam[which] = F.interpolate(walked, size=size, mode="bilinear")[0]
        classes = which.nonzero().flatten().tolist()
        zones = {
            classes[j]: F.interpolate(z[None, None].float(), size=size, mode="nearest")[0, 0].long()
            for j, z in instances.items()
        }
        return cam, zones

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
