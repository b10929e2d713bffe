"""De-noise strategies: turn a black-box detector's class-specific boxes into pseudo labels.

One small module per strategy family, each registering ``f(dets, *, image_labels, width,
height, **params) -> dets`` by name (:mod:`wsod.denoise.registry`); :mod:`wsod.denoise.chain`
composes them. Strategies read only the detections and the image-level labels: never a
ground-truth box.

| name                | module          | what it does                                            |
|---------------------|-----------------|---------------------------------------------------------|
| label_consistency   | consistency     | drop classes not in the image labels (always first)     |
| top1 / topk         | selection       | best box / k best boxes per labelled class              |
| score_threshold     | selection       | score >= thr, top-1 fallback per labelled class         |
| containment         | containment     | drop part boxes inside a higher-ranked same-class box   |
| mist                | mist            | MIST multi-instance mining (top p%, IoU < thr)          |
| pgf                 | pgf             | SoS-WSOD filtering: top-1 + score >= thr, no part boxes |
| minmax_normalize    | normalize       | per-image min-max score normalisation (WeakSAM)         |
| size_filter         | size            | size / aspect sanity relative to the image              |
| nms                 | nms             | class-wise NMS                                          |
| wbf                 | fusion          | weighted fusion of overlapping same-class boxes         |
| weight              | weight          | per-box training weight for the strong stage            |
| image_filter        | image_filter    | drop images with a labelled class unfound (score < min)  |
| reliable_images     | reliable        | keep the most reliable images' boxes (labelled/unlabelled) |
| ignore_regions      | ignore          | other confident boxes -> ignore regions (iscrowd; last) |
| inner_box           | inner           | move the top box onto a confident box inside it         |
"""

from wsod.denoise import (  # noqa: F401  (registers the strategies)
    consistency,
    containment,
    fusion,
    ignore,
    image_filter,
    inner,
    mist,
    nms,
    normalize,
    pgf,
    reliable,
    selection,
    size,
    weight,
)
from wsod.denoise.chain import (
    ABLATION_CHAINS,
    DEFAULT_STRATEGIES,
    apply_chain,
    build_chain,
    denoise_arrays,
    denoise_images,
    describe_chain,
    flatten,
    group_by_image,
    parse_strategies,
)
from wsod.denoise.registry import STRATEGIES, get_strategy, register_strategy

__all__ = [
    "ABLATION_CHAINS",
    "DEFAULT_STRATEGIES",
    "STRATEGIES",
    "apply_chain",
    "build_chain",
    "denoise_arrays",
    "denoise_images",
    "describe_chain",
    "flatten",
    "get_strategy",
    "group_by_image",
    "parse_strategies",
    "register_strategy",
]
