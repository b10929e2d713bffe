"""Refine class activation maps by local pixel affinities: a sparse random walk on the image.

A CAM is computed at the feature stride (16-32 input pixels) and upsampled: its activation
blurs over object boundaries, so the box holding "the activated region" holds the object plus
a halo, or two neighbouring objects joined by it. AffinityNet (Ahn & Kwak, CVPR 2018) and IRN
(Ahn, Cho & Kwak, CVPR 2019) propagate the CAM by a random walk whose transition probabilities
are inter-pixel affinities (learned there), so activation spreads inside objects and stops at
their boundaries. Their reference walk raises a dense (HW x HW) transition matrix to a power,
far too slow on a CPU. Here the transition matrix is sparse and local, as in PAMR (pixel-adaptive
mask refinement, Araslanov & Roth, CVPR 2020): each pixel is linked to its 8 neighbours at each
of a few dilations, and one step of the walk is a weighted average over those neighbours, so
``iters`` steps cost ``iters x K`` multiply-adds per pixel and class (K = 8 x the number of
dilations) instead of a dense matrix power.

The affinities come from the image itself (PAMR's colour kernel: a neighbour is close when its
colour differs little relative to the colour spread of the neighbourhood, softmax over the
neighbours), so no training is needed; :func:`propagate` takes any non-negative row-stochastic
affinities, so learned ones can replace them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor


def _shifted(x: Tensor, dilations: Sequence[int]) -> Iterator[Tensor]:
    """The K = 8 x len(dilations) neighbour views of ``x`` (B, C, H, W), borders replicated:
    by dilation, then row-major within the 3x3 window, the centre left out. The one
    enumeration of the neighbourhood: :func:`neighbours` stacks it, :func:`propagate` sums it."""
    h, w = x.shape[-2:]
    for d in dilations:
        padded = F.pad(x, (d, d, d, d), mode="replicate")
        for dy in (0, d, 2 * d):
            for dx in (0, d, 2 * d):
                if dy != d or dx != d:
                    yield padded[..., dy : dy + h, dx : dx + w]


def neighbours(x: Tensor, dilations: Sequence[int]) -> Tensor:
    """The 8 neighbours of every pixel at each dilation, borders replicated.

    Args:
        x: (B, C, H, W).
        dilations: neighbour distances in pixels.

    Returns:
        (B, C, K, H, W) with K = 8 x len(dilations), ordered by dilation, then row-major within
        the 3x3 window (centre left out).
    """
    return torch.stack(list(_shifted(x, dilations)), dim=2)


def colour_affinities(
    image: Tensor, dilations: Sequence[int] = (1, 2, 4, 8, 12, 24), sigma: float = 0.1
) -> Tensor:
    """PAMR's row-stochastic affinities of each pixel to its neighbours, from colour alone.

    Args:
        image: (B, 3, H, W) at the resolution of the maps to refine (any affine colour scale:
            the kernel is normalised by the local spread).
        dilations: see :func:`neighbours`.
        sigma: kernel width relative to the neighbourhood's colour standard deviation (smaller:
            sharper boundaries).

    Returns:
        (B, K, H, W) non-negative weights summing to 1 over K.
    """
    near = neighbours(image, dilations)  # (B, 3, K, H, W)
    spread = near.std(dim=2, keepdim=True)
    diff = (near - image[:, :, None]).abs() / (sigma * spread + 1e-8)
    return torch.softmax(-diff.mean(dim=1), dim=1)


def propagate(
    maps: Tensor, affinities: Tensor, dilations: Sequence[int], iters: int = 10
) -> Tensor:
    """``iters`` steps of the random walk: each pixel becomes the affinity-weighted average of
    its neighbours' values (``maps <- T maps`` with the sparse transition matrix ``T``).

    Args:
        maps: (B, C, H, W) non-negative maps (e.g. ReLU'd CAMs).
        affinities: (B, K, H, W) from :func:`colour_affinities` (or learned), rows summing to 1.
        dilations: the ones the affinities were computed with.
        iters: walk steps (0: the maps unchanged).

    Returns:
        (B, C, H, W) refined maps.
    """
    weights = affinities[:, None]  # (B, 1, K, H, W)
    for _ in range(iters):
        out = torch.zeros_like(maps)
        for k, near in enumerate(_shifted(maps, dilations)):  # one multiply-add per neighbour
            out.addcmul_(near, weights[:, :, k])
        maps = out
    return maps


def refine_cams(
    cams: Tensor,
    image: Tensor,
    dilations: Sequence[int] = (1, 2, 4, 8, 12, 24),
    iters: int = 10,
    sigma: float = 0.1,
) -> Tensor:
    """CAMs refined by the colour random walk of ``image`` at the CAMs' resolution.

    Args:
        cams: (C, h, w) non-negative maps of one image.
        image: (3, H, W) the (normalised) input of that image, without padding; area-averaged
            down to (h, w).

    Returns:
        (C, h, w) refined maps.
    """
    small = F.adaptive_avg_pool2d(image[None].float(), cams.shape[-2:])
    dilations = tuple(int(d) for d in dilations)
    affinities = colour_affinities(small, dilations, sigma)
    return propagate(cams[None], affinities, dilations, iters)[0]
