"""The random walks a CAM may take before its boxes are scored:
``WSODCAMHead(refine=dict(type=..., ...))``.

* ``colour``: the walk on the input image's colours (PAMR's kernel,
  :func:`~wsod.models.roi_heads.cam_refine.refine_cams`): keys ``iters`` (10), ``dilations``
  ((1, 2, 4, 8, 12, 24)), ``sigma`` (0.1); needs the input images at test time, which
  ``WSODWeakDetector`` passes.
* ``learned``: the walk on the trained affinity branch's affinities raised to ``beta`` (8.0),
  at the branch's resolution (the maps are area-averaged down to it and upsampled back): keys
  ``iters``, ``dilations``, ``beta``; needs the head's ``affinity`` branch, trained
  (``WSODAffinityPhaseHook``).

Both walk only the classes whose probability is at least ``min_prob`` (0.0): the others score
little anyway and cost as much.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from .affinity import predicted_affinities, transition_weights
from .cam_refine import propagate, refine_cams

COMMON_KEYS = ("iters", "dilations", "min_prob")
REFINE_KEYS = {"colour": (*COMMON_KEYS, "sigma"), "learned": (*COMMON_KEYS, "beta")}
DEFAULT_DILATIONS = (1, 2, 4, 8, 12, 24)


def check_refine(cfg: dict | None, has_affinity: bool) -> dict | None:
    """A copy of ``refine`` (None: no walk), its keys checked against its type's.

    Raises:
        ValueError: no or an unknown type, a key the type does not read, or ``learned``
            without the affinity branch.
    """
    if not cfg:
        return None
    cfg = dict(cfg)
    kind = cfg.get("type")
    if "source" in cfg:
        raise ValueError(
            f"WSODCAMHead refine.source={cfg['source']!r}: the walk is chosen by refine.type "
            "now; write refine=dict(type='colour' or 'learned', ...)"
        )
    if kind not in REFINE_KEYS:
        raise ValueError(
            f"WSODCAMHead refine.type={kind!r}: use 'colour' (the image's colours) or "
            "'learned' (the affinity branch)"
        )
    unknown = set(cfg) - {"type", *REFINE_KEYS[kind]}
    if unknown:
        raise ValueError(
            f"WSODCAMHead refine: type {kind!r} does not read {sorted(unknown)}; its keys: "
            f"type, {', '.join(REFINE_KEYS[kind])}"
        )
    if kind == "learned" and not has_affinity:
        raise ValueError(
            "WSODCAMHead refine.type='learned' needs the affinity branch: set "
            "model.roi_head.affinity (and train it, WSODAffinityPhaseHook)"
        )
    return cfg


def walk(
    cam: Tensor, refine: dict, probs: Tensor, image: Tensor | None, embedding: Tensor | None
) -> Tensor:
    """``cam`` with the classes of probability >= ``refine['min_prob']`` walked.

    Args:
        cam: (C, H, W) non-negative maps of one image (padding removed).
        refine: a checked ``refine`` dict (:func:`check_refine`).
        probs: (C,) class probabilities.
        image: (3, H', W') the input image without padding (``colour``).
        embedding: (D, h, w) the affinity branch's embedding of the image (``learned``).

    Returns:
        (C, H, W) maps.
    """
    opts = dict(refine)
    kind = opts.pop("type")
    which = probs >= float(opts.pop("min_prob", 0.0))
    if not which.any():
        return cam
    cam = cam.clone()
    if kind == "colour":
        cam[which] = refine_cams(cam[which], image, **opts)
        return cam
    beta = float(opts.pop("beta", 8.0))
    dilations = tuple(int(d) for d in opts.get("dilations", DEFAULT_DILATIONS))
    weights = transition_weights(predicted_affinities(embedding[None], dilations), beta)
    small = F.adaptive_avg_pool2d(cam[which][None], embedding.shape[-2:])
    walked = propagate(small, weights, dilations, int(opts.get("iters", 10)))
    cam[which] = F.interpolate(walked, size=cam.shape[-2:], mode="bilinear")[0]
    return cam
