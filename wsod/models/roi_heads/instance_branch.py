"""IRN's inter-pixel relations on the CAM head: a displacement field toward instance centroids
and a class-boundary map (Ahn, Cho & Kwak, CVPR 2019), learned from the CAM's own seeds.

The network is the affinity branch's light head (:class:`~wsod.models.roi_heads.affinity.
AffinityBranch`: detached backbone features at several strides, 1x1 convolutions, upsampled and
mixed) with three output channels: the displacement ``(dy, dx)`` in pixels of its own map
(1/``stride`` of the input) and the boundary logit. ``WSODCAMHead(instance=...)`` holds it and
``WSODAffinityPhaseHook`` trains it with the classifier (and the trunk) frozen.

Targets come from the seeds of the head's CAM (:func:`~wsod.models.roi_heads.affinity.
cam_seeds`: confident class pixels, confident background, the rest unknown). Image labels give
no instances, so each 4-connected component of a class's seed pixels is taken as one instance
(a pseudo instance):

* displacement: a seed pixel ``x`` of component ``k`` should point to the component's centroid,
  ``D(x) = c_k - x``; a background seed pixel should not move, ``D(x) = 0``. The loss is the L1
  error, averaged over foreground and over background pixels, half each. (IRN learns the same
  field from pair differences ``D(x_i) - D(x_j) = x_j - x_i``, which fixes it up to a constant
  it removes with a running mean; with the components' centroids known, the field is regressed
  to them directly and has no free constant.)
* boundary: IRN's class-boundary loss. The affinity of two pixels is ``1 - max B`` over the
  straight path between them (a boundary anywhere between them separates them); pairs of
  pixels within reach (each pixel's 8 neighbours at ``dilations``, the affinity branch's
  neighbourhood) are positive when both carry the same seed and negative when their seeds
  differ, with AffinityNet's balance (:func:`~wsod.models.roi_heads.affinity.affinity_loss`).

Only image labels and the black box's own maps are used: never a ground-truth box.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from scipy import ndimage
from torch import Tensor

from .affinity import (
    BACKGROUND,
    AffinityBranch,
    affinity_loss,
    affinity_targets,
    branch_seeds,
)
from .cam_instances import FOUR_CONNECTED
from .cam_refine import neighbours

# ``WSODCAMHead(instance=...)``'s options and their defaults (in_indices and in_channels have
# none). seed_hi / seed_lo: IRN's confident foreground and background thresholds (0.30, 0.05).
INSTANCE_DEFAULTS = dict(
    stride=8,
    channels=64,
    seed_hi=0.3,
    seed_lo=0.05,
    dilations=(1, 2, 3, 4, 6, 8),
    loss_weight=1.0,
)
INSTANCE_KEYS = ("in_indices", "in_channels", *INSTANCE_DEFAULTS)
OUTPUTS = 3  # dy, dx, boundary logit


def instance_branch(cfg: dict) -> AffinityBranch:
    """The network for checked ``instance`` options: the affinity branch's head with
    :data:`OUTPUTS` channels."""
    return AffinityBranch(cfg["in_indices"], cfg["in_channels"], cfg["channels"], OUTPUTS)


def split_outputs(out: Tensor) -> tuple[Tensor, Tensor]:
    """(B, 3, h, w) branch output -> displacement (B, 2, h, w) and boundary (B, h, w) in [0, 1]."""
    return out[:, :2], torch.sigmoid(out[:, 2])


def displacement_targets(seeds: Tensor) -> tuple[Tensor, Tensor, Tensor, int]:
    """The field each seeded pixel should have.

    Args:
        seeds: (H, W) from :func:`~wsod.models.roi_heads.affinity.cam_seeds`.

    Returns:
        ``target`` (2, H, W) (dy, dx) to the centroid of the pixel's seed component (0 on
        background), ``fg`` and ``bg`` (H, W) bool: the pixels the loss reads, and the
        number of pseudo instances.
    """
    s = seeds.cpu().numpy()
    target = np.zeros((2, *s.shape), dtype=np.float32)
    ys, xs = np.indices(s.shape)
    total = 0
    for value in np.unique(s[s > BACKGROUND]):
        comps, n = ndimage.label(s == value, structure=FOUR_CONNECTED)
        total += n
        for k in range(1, n + 1):
            inside = comps == k
            target[0][inside] = ys[inside].mean() - ys[inside]
            target[1][inside] = xs[inside].mean() - xs[inside]
    return (
        torch.from_numpy(target).to(seeds.device),
        seeds > BACKGROUND,
        seeds == BACKGROUND,
        total,
    )


def displacement_loss(field: Tensor, target: Tensor, fg: Tensor, bg: Tensor) -> Tensor:
    """L1 error of ``field`` (2, H, W), averaged over ``fg`` and over ``bg`` pixels, half each
    (a kind without pixels adds nothing)."""
    err = (field - target).abs().sum(0)
    loss = field.new_zeros(())
    for mask in (fg, bg):
        if mask.any():
            loss = loss + 0.5 * err[mask].mean()
    return loss


def path_max(boundary: Tensor, dilations: Sequence[int]) -> Tensor:
    """The largest boundary value on the straight path from each pixel to each neighbour
    (both ends included), in :func:`~wsod.models.roi_heads.cam_refine.neighbours`' layout.

    Args:
        boundary: (B, H, W).

    Returns:
        (B, K, H, W) with K = 8 x len(dilations).
    """
    reach = max(int(d) for d in dilations)
    b, h, w = boundary.shape
    steps = neighbours(boundary[:, None], tuple(range(1, reach + 1)))[:, 0]  # (B, 8 reach, H, W)
    running = steps.view(b, reach, 8, h, w).cummax(dim=1).values
    running = torch.maximum(running, boundary[:, None, None])
    return torch.cat([running[:, int(d) - 1] for d in dilations], dim=1)


def instance_phase_loss(
    out: Tensor,
    maps: Tensor,
    image_labels: list,
    cfg: dict,
    batch_img_metas: list[dict] | None = None,
) -> dict[str, Tensor]:
    """The branch's losses against a CAM head's seeds.

    Args:
        out: (B, 3, h, w) the branch's output at 1/``cfg['stride']`` of the input.
        maps: (B, C, h, w) the head's ReLU'd class maps at the same size (no gradient).
        image_labels: per image, its 0-based class indices.
        cfg: the head's instance options (:data:`INSTANCE_DEFAULTS` filled in).
        batch_img_metas: ``img_shape`` per image: the padding is left unseeded.

    Returns:
        ``loss_displacement`` and ``loss_boundary`` (each x ``loss_weight``) and, logged, the
        number of pseudo instances per image (``seed_instances``).
    """
    dilations = tuple(int(d) for d in cfg["dilations"])
    field, boundary = split_outputs(out)
    affinities = 1 - path_max(boundary, dilations)
    disp, bound, count = [], [], []
    for i, labels in enumerate(image_labels):
        seeds = branch_seeds(
            maps[i], labels, cfg, None if batch_img_metas is None else batch_img_metas[i]
        )
        target, fg, bg, n = displacement_targets(seeds)
        disp.append(displacement_loss(field[i], target, fg, bg))
        bound.append(affinity_loss(affinities[i], affinity_targets(seeds, dilations)))
        count.append(float(n))
    weight = float(cfg["loss_weight"])
    return {
        "loss_displacement": weight * torch.stack(disp).mean(),
        "loss_boundary": weight * torch.stack(bound).mean(),
        "seed_instances": out.new_tensor(count).mean(),
    }
