"""Learned inter-pixel affinities from CAM seeds (AffinityNet, Ahn & Kwak CVPR 2018): targets,
prediction and loss, on the same sparse neighbourhood as the random walk of
:mod:`wsod.models.roi_heads.cam_refine`.

Image labels give no pixel labels, but a CAM's most confident pixels do: ``seeds`` marks each
pixel as one class (its CAM, divided by its maximum, above ``hi``), background (every class
below ``lo``) or unknown. Two seeded pixels within reach of each other are a positive pair
(same seed) or a negative pair (different seeds); pairs with an unknown pixel are not used.
A network predicts an embedding per pixel; the affinity of a pair is ``exp(-||f_i - f_j||_1)``
(AffinityNet's form: 1 for equal embeddings). The loss balances background-positive,
foreground-positive and negative pairs (1/4, 1/4, 1/2) as AffinityNet does. The predicted
affinities, raised to a power ``beta`` and normalised over each pixel's neighbours, are the
transition probabilities :func:`~wsod.models.roi_heads.cam_refine.propagate` walks with.

:class:`AffinityBranch` is the network: IRN's design (Ahn, Cho & Kwak, CVPR 2019) of a light
head on the backbone's features at several strides, detached so that it cannot change the
classifier, upsampled to the resolution the CAMs are scored at and mixed into one embedding.
``WSODCAMHead(affinity=...)`` holds it; ``WSODAffinityPhaseHook`` trains it after the
classifier, from the classifier's own seeds.

Only image labels and the black box's own maps are used: never a ground-truth box.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from .cam_refine import neighbours

IGNORE = -1  # seed value of pixels that are neither confident foreground nor background
BACKGROUND = 0  # seed value of confident background; class c is seed c + 1


def cam_seeds(cams: Tensor, labels: Sequence[int], hi: float = 0.6, lo: float = 0.1) -> Tensor:
    """Seed labels of one image from its CAMs and image labels.

    Args:
        cams: (C, H, W) non-negative maps.
        labels: the image's classes (0-based); the other classes' maps are not used.
        hi: a pixel is seeded with the labelled class of largest normalised map when that map
            is >= ``hi`` (fraction of the class map's maximum).
        lo: a pixel is background when every labelled class's normalised map is < ``lo``.

    Returns:
        (H, W) long: ``c + 1`` for class ``c``, :data:`BACKGROUND`, or :data:`IGNORE`.
    """
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"cam_seeds: need 0 <= lo <= hi <= 1, got lo={lo}, hi={hi}")
    h, w = cams.shape[-2:]
    seeds = torch.full((h, w), IGNORE, dtype=torch.long, device=cams.device)
    labels = sorted({int(c) for c in labels})
    if not labels:
        return seeds.fill_(BACKGROUND)
    maps = cams[labels]
    maps = maps / maps.flatten(1).max(dim=1).values.clamp(min=1e-6)[:, None, None]
    best, which = maps.max(dim=0)
    fg = best >= hi
    seeds[fg] = torch.as_tensor(labels, device=cams.device)[which[fg]] + 1
    seeds[best < lo] = BACKGROUND
    return seeds


def branch_seeds(maps: Tensor, labels: Sequence[int], cfg: dict, meta: dict | None) -> Tensor:
    """:func:`cam_seeds` of one image for a branch trained on them (the affinity branch, the
    instance branch): its ``seed_hi`` / ``seed_lo``, and the padding beyond ``meta['img_shape']``
    (at 1/``cfg['stride']`` of the input) left unseeded (:data:`IGNORE`). ``meta`` None: no
    padding."""
    seeds = cam_seeds(maps, labels, cfg["seed_hi"], cfg["seed_lo"])
    if meta is not None:
        h, w = meta["img_shape"][:2]
        stride = int(cfg["stride"])
        seeds[round(h / stride) :] = IGNORE
        seeds[:, round(w / stride) :] = IGNORE
    return seeds


def affinity_targets(seeds: Tensor, dilations: Sequence[int]) -> dict[str, Tensor]:
    """Pair masks between every pixel and its neighbours (the layout of
    :func:`~wsod.models.roi_heads.cam_refine.neighbours`).

    Args:
        seeds: (H, W) from :func:`cam_seeds`.

    Returns:
        ``bg_pos``, ``fg_pos``, ``neg``: (K, H, W) bool masks (both pixels seeded: same
        background, same class, different).
    """
    s = seeds[None, None].float()
    other = neighbours(s, dilations)[0, 0].long()  # (K, H, W)
    centre = seeds[None].expand_as(other)
    known = (centre != IGNORE) & (other != IGNORE)
    same = known & (centre == other)
    return {
        "bg_pos": same & (centre == BACKGROUND),
        "fg_pos": same & (centre != BACKGROUND),
        "neg": known & (centre != other),
    }


def predicted_affinities(embedding: Tensor, dilations: Sequence[int]) -> Tensor:
    """``exp(-||f_i - f_j||_1)`` (mean over channels) between each pixel and its neighbours.

    Args:
        embedding: (B, D, H, W) per-pixel features.

    Returns:
        (B, K, H, W) in (0, 1].
    """
    near = neighbours(embedding, dilations)  # (B, D, K, H, W)
    return torch.exp(-(near - embedding[:, :, None]).abs().mean(dim=1))


def affinity_loss(affinities: Tensor, targets: dict[str, Tensor]) -> Tensor:
    """AffinityNet's balanced loss for one image: 1/4 background-positive + 1/4
    foreground-positive (``-log a``) + 1/2 negative (``-log(1 - a)``) pairs, each averaged over
    its pairs (a kind without pairs adds nothing).

    Args:
        affinities: (K, H, W) predicted affinities of one image.
        targets: :func:`affinity_targets` of its seeds.
    """
    eps = 1e-5
    terms = (
        (0.25, -torch.log(affinities + eps), targets["bg_pos"]),
        (0.25, -torch.log(affinities + eps), targets["fg_pos"]),
        (0.5, -torch.log(1 - affinities + eps), targets["neg"]),
    )
    loss = affinities.new_zeros(())
    for weight, values, mask in terms:
        if mask.any():
            loss = loss + weight * values[mask].mean()
    return loss


def transition_weights(affinities: Tensor, beta: float = 8.0) -> Tensor:
    """Row-stochastic walk weights from predicted affinities: ``a ** beta`` normalised over
    each pixel's neighbours (AffinityNet's beta sharpens the walk at boundaries)."""
    powered = affinities.clamp(min=0).pow(beta)
    return powered / powered.sum(dim=1, keepdim=True).clamp(min=1e-12)


class AffinityBranch(nn.Module):
    """Per-pixel embedding from several backbone feature maps (IRN's branches, simplified).

    Each input level goes through a 1x1 convolution, GroupNorm and ReLU, is upsampled
    (bilinear) to the output size, and the concatenation is mixed by a 1x1 convolution + GroupNorm
    + ReLU and projected to ``embed_channels``. The inputs are detached: the branch learns on
    top of the backbone and never moves it.

    Args:
        in_indices: which of the backbone's outputs it reads.
        in_channels: their channels (same order).
        channels: width of each level's projection and of the mixing layer.
        embed_channels: embedding size D.
    """

    def __init__(
        self,
        in_indices: Sequence[int],
        in_channels: Sequence[int],
        channels: int = 64,
        embed_channels: int = 32,
    ) -> None:
        super().__init__()
        if len(in_indices) != len(in_channels) or not in_indices:
            raise ValueError(
                f"AffinityBranch: in_indices {tuple(in_indices)} and in_channels "
                f"{tuple(in_channels)} must be non-empty and of the same length"
            )
        self.in_indices = tuple(int(i) for i in in_indices)

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 1, bias=False), nn.GroupNorm(4, cout), nn.ReLU(inplace=True)
            )

        self.levels = nn.ModuleList(block(c, channels) for c in in_channels)
        self.mix = block(channels * len(in_channels), channels)
        self.embed = nn.Conv2d(channels, embed_channels, 1)

    def forward(self, feats: Sequence[Tensor], size: tuple[int, int]) -> Tensor:
        """Backbone outputs -> (B, D, *size) embedding."""
        ups = [
            F.interpolate(level(feats[i].detach()), size=size, mode="bilinear", align_corners=False)
            for i, level in zip(self.in_indices, self.levels, strict=True)
        ]
        return self.embed(self.mix(torch.cat(ups, dim=1)))


# ``WSODCAMHead(affinity=...)``'s options and their defaults (in_indices and in_channels have none)
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


def affinity_phase_loss(
    embedding: Tensor,
    maps: Tensor,
    image_labels: list,
    cfg: dict,
    batch_img_metas: list[dict] | None = None,
) -> dict[str, Tensor]:
    """AffinityNet's loss of the branch's embedding against a CAM head's seeds.

    Args:
        embedding: (B, D, h, w) the branch's embedding at 1/``cfg['stride']`` of the input.
        maps: (B, C, h, w) the head's ReLU'd class maps at the same size (no gradient).
        image_labels: per image, its 0-based class indices.
        cfg: the head's affinity options (:data:`AFFINITY_DEFAULTS` filled in).
        batch_img_metas: ``img_shape`` per image: the padding is left unseeded.

    Returns:
        ``loss_affinity`` (x ``loss_weight``) and, logged, the seeded shares ``seed_fg`` and
        ``seed_bg`` of the image (a phase whose seeds are nearly all background or all
        foreground teaches little).
    """
    dilations = tuple(int(d) for d in cfg["dilations"])
    affinities = predicted_affinities(embedding, dilations)
    losses, fg, bg = [], [], []
    for i, labels in enumerate(image_labels):
        seeds = branch_seeds(
            maps[i], labels, cfg, None if batch_img_metas is None else batch_img_metas[i]
        )
        losses.append(affinity_loss(affinities[i], affinity_targets(seeds, dilations)))
        known = (seeds != IGNORE).sum().clamp(min=1)
        fg.append((seeds > BACKGROUND).sum() / known)
        bg.append((seeds == BACKGROUND).sum() / known)
    return {
        "loss_affinity": float(cfg["loss_weight"]) * torch.stack(losses).mean(),
        "seed_fg": torch.stack(fg).mean().detach(),
        "seed_bg": torch.stack(bg).mean().detach(),
    }
