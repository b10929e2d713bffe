"""One mask per object instance inside a class's CAM region, and one box per mask.

A class's CAM region (the walked, normalised map above a threshold) often holds two objects of
the class and the context between them; its box then holds both. IRN (Ahn, Cho & Kwak, CVPR
2019) separates the instances with a *displacement field*: every pixel ``x`` of an object
points to its instance's centroid, ``x + D(x)``. Following the field from every pixel gathers
the pixels of one instance at one place, and the places where the field is short (its
"centroid regions") are the instances. Here, for one image and one class:

1. :func:`follow_field` moves every pixel along the field ``iters`` times (bilinear reads of
   the field at the current position, clipped to the map: IRN's refinement of the centroids);
2. :func:`centroid_regions`: the 4-connected components of the class mask where the field is
   shorter than ``centroid_thr`` pixels. IRN takes them over the whole image; inside the mask
   the background (where the field is short too) cannot join two instances' centroids;
3. :func:`instance_labels`: each mask pixel joins the centroid region nearest to where it
   landed (a Euclidean distance transform finds it; IRN gives pixels landing outside every
   region one group of their own). An optional class-boundary map (IRN's second output, in
   [0, 1]) first removes the mask's pixels on a boundary (>= ``boundary_thr``); a mask without
   a centroid region is one instance;
4. :func:`label_boxes`: the tight box of each label, ``x1, y1, x2, y2`` with ``x2`` / ``y2``
   one past the last column / row (pixel edges, the summed-area convention of
   :mod:`~wsod.models.roi_heads.cam_scoring`).

:func:`component_labels` is the same grouping without a field: one group per 4-connected
component of the mask (IRN's post-processing splits each instance this way too).
:func:`group_scores` scores boxes against each group's own region, which is how the CAM head's
``instances`` and ``components`` scoring types rank proposals and mask boxes together.

The field is ``(2, H, W)``: ``dy`` then ``dx`` (IRN's order), in pixels of the maps it comes
with. Everything here is plain torch / numpy / scipy on one image; nothing is learned.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage
from torch import Tensor

from .cam_scoring import box_sums, summed_area

FOUR_CONNECTED = ndimage.generate_binary_structure(2, 1)


def follow_field(field: Tensor, iters: int) -> Tensor:
    """Where every pixel lands after ``iters`` steps along ``field``.

    Args:
        field: (2, H, W) displacement (dy, dx) in pixels.
        iters: steps; each adds the field read (bilinearly) at the current position, and the
            positions are clipped to the map.

    Returns:
        (2, H, W) float positions (y, x); ``iters=0`` gives each pixel's own coordinates.
    """
    _, h, w = field.shape
    field = field.float()
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32, device=field.device),
        torch.arange(w, dtype=torch.float32, device=field.device),
        indexing="ij",
    )
    pos = torch.stack([ys, xs])
    size = pos.new_tensor([max(h - 1, 1), max(w - 1, 1)])[:, None, None]
    for _ in range(int(iters)):
        grid = (pos / size * 2 - 1).flip(0).permute(1, 2, 0)[None]  # (1, H, W, (x, y))
        step = F.grid_sample(
            field[None], grid, mode="bilinear", padding_mode="border", align_corners=True
        )[0]
        pos = pos + step
        pos[0].clamp_(0, h - 1)
        pos[1].clamp_(0, w - 1)
    return pos


def component_labels(mask: np.ndarray | Tensor) -> np.ndarray:
    """(H, W) int labels of the 4-connected components of ``mask`` (0: outside it)."""
    mask = mask.cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    labels, _ = ndimage.label(mask.astype(bool), structure=FOUR_CONNECTED)
    return labels


def centroid_regions(field: Tensor, mask: np.ndarray | Tensor, centroid_thr: float) -> np.ndarray:
    """(H, W) int labels of the connected parts of ``mask`` where ``|field| < centroid_thr``."""
    short = (field.float().norm(dim=0) < centroid_thr).cpu().numpy()
    mask = mask.cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    return component_labels(short & mask.astype(bool))


def instance_labels(
    field: Tensor,
    mask: np.ndarray | Tensor,
    centroid_thr: float,
    iters: int,
    boundary: Tensor | None = None,
    boundary_thr: float = 0.5,
    landed: Tensor | None = None,
) -> np.ndarray:
    """Group a class mask's pixels into instances by where the field takes them.

    Args:
        field: (2, H, W) displacement (dy, dx) toward each pixel's instance centroid.
        mask: (H, W) bool, the class's region.
        centroid_thr: a centroid region is where the field is shorter than this (pixels).
        iters: steps of :func:`follow_field`.
        boundary: optional (H, W) class-boundary map in [0, 1]; pixels >= ``boundary_thr``
            leave the mask first.
        landed: :func:`follow_field`'s output when already computed (it does not depend on
            the mask, so an image's classes share it).

    Returns:
        (H, W) int: 0 outside the (cut) mask, 1..K one label per instance.
    """
    mask = mask.cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    mask = mask.astype(bool)
    if boundary is not None:
        mask = mask & (boundary.float().cpu().numpy() < boundary_thr)
    out = np.zeros(mask.shape, dtype=np.int64)
    if not mask.any():
        return out
    regions = centroid_regions(field, mask, centroid_thr)
    if regions.max() == 0:  # no centroid inside the mask: one instance
        out[mask] = 1
        return out
    pos = follow_field(field, iters) if landed is None else landed
    pos = pos.round().long().cpu().numpy()
    # the label of the nearest centroid-region pixel, for every pixel of the map
    _, (ny, nx) = ndimage.distance_transform_edt(regions == 0, return_indices=True)
    nearest = regions[ny, nx]
    ys, xs = np.nonzero(mask)
    _, which = np.unique(nearest[pos[0, ys, xs], pos[1, ys, xs]], return_inverse=True)
    out[ys, xs] = which.ravel() + 1  # 1..K without gaps
    return out


def drop_small(labels: np.ndarray, min_area: int) -> np.ndarray:
    """``labels`` without the labels of fewer than ``min_area`` pixels, renumbered 1..K."""
    counts = np.bincount(labels.ravel())
    keep = counts >= max(int(min_area), 1)
    keep[0] = False
    new = np.zeros(len(counts), dtype=np.int64)
    new[keep] = np.arange(1, int(keep.sum()) + 1)
    return new[labels]


def label_boxes(labels: np.ndarray | Tensor) -> Tensor:
    """(K, 4) float boxes ``x1, y1, x2, y2`` (pixel edges: ``x2`` is one past the last column)
    of labels 1..K of an (H, W) label map; a missing label gets the empty box (0, 0, 0, 0)."""
    labels = torch.as_tensor(np.asarray(labels) if not isinstance(labels, Tensor) else labels)
    k = int(labels.max()) if labels.numel() else 0
    h, w = labels.shape
    flat = labels.reshape(-1).long()
    ys = torch.arange(h).repeat_interleave(w)
    xs = torch.arange(w).repeat(h)
    inf = h + w + 1
    lo = torch.full((2, k + 1), inf, dtype=torch.long)
    hi = torch.full((2, k + 1), -1, dtype=torch.long)
    for row, coord in enumerate((xs, ys)):
        lo[row].scatter_reduce_(0, flat, coord, reduce="amin")
        hi[row].scatter_reduce_(0, flat, coord, reduce="amax")
    boxes = torch.stack([lo[0], lo[1], hi[0] + 1, hi[1] + 1], dim=1)[1:].float()
    boxes[hi[0, 1:] < 0] = 0.0
    return boxes


def group_masks(labels: np.ndarray, device=None) -> Tensor:
    """(K, H, W) bool masks of labels 1..K."""
    labels = torch.as_tensor(labels, device=device)
    k = int(labels.max()) if labels.numel() else 0
    return labels[None] == torch.arange(1, k + 1, device=labels.device)[:, None, None]


def group_scores(cam: Tensor, masks: Tensor, boxes: Tensor, thr: float) -> Tensor:
    """Score boxes against each group's region: the ``thresholded`` score of a map that is
    ``cam - thr`` inside the group and ``-thr`` outside it, times the group's peak.

    A box scores its group's peak when it holds the group and nothing else; it loses what it
    leaves out and ``thr`` per pixel it adds outside the group, another instance's pixels
    included. So a box around two instances scores below each instance's own box.

    Args:
        cam: (H, W) one class's map, divided by its maximum.
        masks: (K, H, W) bool group masks (inside ``cam >= thr``).
        boxes: (R, 4) x1y1x2y2 in map pixels.
        thr: the mask's threshold on ``cam``.

    Returns:
        (R, K) scores >= 0.
    """
    if not len(masks):
        return cam.new_zeros(len(boxes), 0)
    shifted = torch.where(masks, cam[None] - thr, cam.new_full((), -thr))
    mass = shifted.clamp(min=0).flatten(1).sum(1).clamp(min=1e-6)  # (K,)
    peak = torch.where(masks, cam[None], cam.new_zeros(())).flatten(1).max(1).values
    return (box_sums(summed_area(shifted), boxes) / mass * peak).clamp(min=0)


def class_groups(
    cam: Tensor,
    thr: float,
    min_area: int,
    field: Tensor | None = None,
    centroid_thr: float = 0.0,
    iters: int = 0,
    boundary: Tensor | None = None,
    boundary_thr: float = 0.5,
    landed: Tensor | None = None,
) -> np.ndarray:
    """The groups of one class's region ``cam >= thr``: its instances (:func:`instance_labels`,
    ``field`` given) or its connected components (no field), without those smaller than
    ``min_area`` pixels. All lengths in pixels of ``cam``.

    Returns:
        (H, W) int labels 0..K.
    """
    mask = (cam >= thr).cpu().numpy()
    if field is None:
        labels = component_labels(mask)
    else:
        labels = instance_labels(field, mask, centroid_thr, iters, boundary, boundary_thr, landed)
    return drop_small(labels, min_area)


def score_by_groups(
    cams: Tensor, boxes: Tensor, thr: float, groups: list[np.ndarray]
) -> tuple[Tensor, Tensor]:
    """Proposals and the groups' own boxes scored against every class's groups.

    Args:
        cams: (C, H, W) maps, each divided by its maximum.
        boxes: (R, 4) proposals x1y1x2y2 in map pixels.
        thr: the threshold the groups were cut at.
        groups: per class, its (H, W) group labels (:func:`class_groups`).

    Returns:
        ``mask_boxes`` (E, 4): the tight box of every group of every class, in map pixels, and
        ``scores`` (R + E, C): for each box (the proposals, then the mask boxes) and class, its
        best :func:`group_scores` over the class's groups (0 for a class without a group).
    """
    masks = [group_masks(g, device=cams.device) for g in groups]
    mask_boxes = torch.cat([label_boxes(g).to(boxes) for g in groups]).reshape(-1, 4)
    every = torch.cat([boxes, mask_boxes])
    scores = cams.new_zeros(len(every), len(groups))
    for c, m in enumerate(masks):
        if len(m):
            scores[:, c] = group_scores(cams[c], m, every, thr).max(dim=1).values
    return mask_boxes, scores
