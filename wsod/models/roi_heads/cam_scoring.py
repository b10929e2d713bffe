"""How a CAM scores a box: ``WSODCAMHead(scoring=dict(type=..., ...))``.

For every class, the CAM (ReLU of the class map, upsampled, divided by its maximum) scores each
proposal by how much of the activation it holds for how much of the image it covers::

    mass_minus_area:  score = mass_in / mass_total - area_weight x area_box / area_image
    thresholded:      score = sum over the box of (CAM - thr)
                              / sum over the image of max(CAM - thr, 0)
    image:            score = 1 (every box gets the class probability alone)
    instances:        per instance mask of the class region (the head's displacement field,
                      :mod:`~wsod.models.roi_heads.cam_instances`): 'thresholded' on the
                      instance's own region x its peak; the best instance; each mask's own box
                      joins the proposals
    components:       the same per 4-connected component of the region (no field needed)

Scores are clipped at 0; the head multiplies them by the class probability. Sums over boxes use
a summed-area table, so 1000 proposals x 20 classes cost a few ms.

``mass_minus_area`` is maximal for the box holding the pixels above ``area_weight`` x the map's
mean: ``area_weight`` (default 1) trades mass for tightness. On VOC the top boxes at 1 are often
too large, a larger weight shrinks them onto parts rather than whole objects
(docs/experiments/2026-12-03-weak-test-time-settings.md). ``thresholded`` is the proposal form of
the usual "threshold the CAM at thr x its maximum and box the region" rule: it is 1 for a box
holding exactly the pixels above ``thr`` and loses what the box leaves out and what it adds
below ``thr``. ``image`` with one whole-image proposal per image (``wsod proposals --method
whole_image``) turns the black box into its image classifier (``wsod rescore``); it reads no
map, so it ignores the other keys (and the head's ``refine``), which lets a config switch any
CAM to it with ``scoring.type=image`` alone.

Scores measured and removed (the experiment logs keep their numbers): ``mean_in_out``,
``context`` (docs/experiments/2026-12-04-cam-context-score.md), ``cam_power`` and the zone
splits ``split_zones`` / ``zone_thr`` / ``min_zone_share`` / ``refine.instance_thr``
(docs/experiments/2026-12-05-learned-affinity.md).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

# each type and the keys it reads, with their defaults
SCORING_KEYS = {
    "mass_minus_area": {"area_weight": 1.0},
    "thresholded": {"thr": 0.2},
    "image": {},
    # per group of the class region (mask boxes added to the proposals; the head runs them,
    # :func:`~wsod.models.roi_heads.cam_instances.score_by_groups`). thr as 'thresholded';
    # min_area: smaller groups are dropped (fraction of the image, IRN's 1 %); centroid_thr:
    # a centroid region is where the field is shorter (input pixels: IRN's 2.5 at stride 4);
    # iters: steps along the field; boundary_thr: boundary pixels leave the mask; min_prob:
    # only the classes whose probability reaches it are grouped, the others keep their
    # 'thresholded' score at thr (as the walk's min_prob: grouping costs per class)
    "instances": {
        "thr": 0.3,
        "min_area": 0.01,
        "centroid_thr": 10.0,
        "iters": 100,
        "boundary_thr": 0.5,
        "min_prob": 0.0,
    },
    "components": {"thr": 0.3, "min_area": 0.01, "min_prob": 0.0},
}
GROUP_SCORINGS = ("instances", "components")
DEFAULT_SCORING = {"type": "mass_minus_area"}
REMOVED = {
    "mean_in_out": "removed (measured, not adopted); use 'mass_minus_area' or 'thresholded'",
    "context": "removed (docs/experiments/2026-12-04-cam-context-score.md); use "
    "'mass_minus_area' or 'thresholded'",
}


def check_scoring(cfg: dict | None) -> dict:
    """``scoring`` with its type's defaults filled in.

    Raises:
        ValueError: an unknown type, or a key the type does not read (``image`` reads none and
            ignores any; ``components`` ignores the keys of ``instances``, so that an
            ``instances`` config switches to it with ``scoring.type=components`` alone).
    """
    cfg = dict(DEFAULT_SCORING if cfg is None else cfg)
    kind = cfg.pop("type", None)
    if kind in REMOVED:
        raise ValueError(f"WSODCAMHead scoring.type={kind!r}: {REMOVED[kind]}")
    if kind not in SCORING_KEYS:
        raise ValueError(f"WSODCAMHead scoring.type={kind!r}: use one of {', '.join(SCORING_KEYS)}")
    known = SCORING_KEYS[kind]
    unknown = set(cfg) - set(known)
    if kind == "components":  # ignores the field's keys: scoring.type alone switches
        unknown -= set(SCORING_KEYS["instances"])
    if unknown and kind != "image":
        raise ValueError(
            f"WSODCAMHead scoring: {kind!r} does not read {sorted(unknown)}; its keys: "
            f"{', '.join(known) or 'none'}"
        )
    return {"type": kind, **known, **{k: v for k, v in cfg.items() if k in known}}


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


def cam_box_scores(
    cam: Tensor,
    boxes: Tensor,
    mode: str = "mass_minus_area",
    thr: float = 0.2,
    area_weight: float = 1.0,
) -> Tensor:
    """Score boxes on normalised CAMs.

    Args:
        cam: (C, H, W) non-negative maps, each divided by its maximum.
        boxes: (R, 4) x1y1x2y2 in map pixels.
        mode: a ``scoring.type`` (see the module docstring).
        thr: ``thresholded``'s threshold (a fraction of each map's maximum).
        area_weight: ``mass_minus_area``'s area penalty.

    Returns:
        (R, C) scores >= 0.
    """
    c, h, w = cam.shape
    if mode == "image":
        return cam.new_ones(len(boxes), c)
    if mode == "thresholded":
        shifted = cam - thr
        positive = shifted.clamp(min=0).flatten(1).sum(1).clamp(min=1e-6)  # (C,)
        return (box_sums(summed_area(shifted), boxes) / positive).clamp(min=0)
    if mode in GROUP_SCORINGS:
        raise ValueError(f"CAM box score mode {mode!r} adds boxes: WSODCAMHead runs it")
    if mode != "mass_minus_area":
        raise ValueError(f"unknown CAM box score mode {mode!r}")
    integral = summed_area(cam)
    inside = box_sums(integral, boxes)  # (R, C)
    total = integral[:, -1, -1].clamp(min=1e-6)  # (C,)
    b = boxes.round().clamp(min=0)
    bw = (b[:, 2].clamp(max=w) - b[:, 0].clamp(max=w)).clamp(min=0)
    bh = (b[:, 3].clamp(max=h) - b[:, 1].clamp(max=h)).clamp(min=0)
    area = (bw * bh)[:, None]
    score = inside / total - area_weight * area / float(h * w)
    return score.clamp(min=0)


def score_boxes(cam: Tensor, boxes: Tensor, scoring: dict) -> Tensor:
    """:func:`cam_box_scores` with a checked ``scoring`` dict (:func:`check_scoring`)."""
    opts = {k: v for k, v in scoring.items() if k != "type"}
    if scoring["type"] == "image":
        opts = {}
    return cam_box_scores(cam, boxes, scoring["type"], **opts)
