"""Ignore regions: keep the black box's unselected high-scoring boxes as "don't care" areas.

Selection keeps about one box per labelled class, so most objects of a pseudo-labelled image
get no box (a small share of the objects on VOC07 train) and the strong detector learns them as
background.
This step marks the black box's *other* confident boxes of the labelled classes (score >=
``rel_score`` x the class's top score in that image) as ignore regions: they are written as
``iscrowd`` 1 annotations, which mmdet's ``CocoDataset`` turns into ``ignored_instances``, and
anchors / proposals lying mostly inside one (``MaxIoUAssigner(ignore_iof_thr=...)`` in the strong
config) are neither positives nor negatives. Measured on VOC07 (how many missed objects the
regions cover, and the strong detector with and without them), the VOC pipeline leaves the step
out (docs/experiments/2026-12-03-ignore-regions.md).

A region that holds more than ``max_overlap`` of a selected box is dropped: mmdet's assigner
lets ignore regions override positives, so a region around a pseudo box would erase its
positives. Regions are added only to images that keep at least one pseudo box (an image with
ignore regions only would train on nothing but unassigned anchors).

The step must be the last of the chain: it reads the chain's input (``source``, the detections
after label consistency) besides the selected boxes, and the boxes it adds carry ``ignore`` 1.
"""

from __future__ import annotations

import numpy as np

from wsod.denoise.common import group_keys, image_index, pair_iou, segment_minmax, take
from wsod.denoise.registry import register_strategy

#: strategies after which no other step may run (checked by ``build_chain``)
FINAL_STRATEGIES = ("ignore_regions",)


def _same_image_pairs(ia: np.ndarray, ib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All index pairs ``(i, j)`` with ``ia[i] == ib[j]``."""
    order = np.argsort(ib, kind="stable")
    sb = ib[order]
    lo = np.searchsorted(sb, ia, "left")
    cnt = np.searchsorted(sb, ia, "right") - lo
    i = np.repeat(np.arange(len(ia)), cnt)
    offset = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return i, order[np.repeat(lo, cnt) + offset]


@register_strategy("ignore_regions")
def ignore_regions(
    dets: dict,
    *,
    image_labels: np.ndarray,
    width,
    height,
    source: dict,
    rel_score: float = 0.5,
    max_overlap: float = 0.3,
) -> dict:
    """Append the source's other confident boxes of the labelled classes as ignore regions.

    Args:
        source: the chain's input after label consistency (filled in by the chain).
        rel_score: a source box becomes a region when it scores >= rel_score x the top score of
            its (image, class) in the source; in (0, 1].
        max_overlap: drop a region holding more than this share of any selected box's area.

    Returns:
        ``dets`` with ``ignore`` 0, followed by the regions (``ignore`` 1, their own scores).
    """
    if not 0.0 < rel_score <= 1.0:
        raise ValueError(f"ignore_regions: rel_score must be in (0, 1], got {rel_score}")
    if not 0.0 <= max_overlap <= 1.0:
        raise ValueError(f"ignore_regions: max_overlap must be in [0, 1], got {max_overlap}")
    kept = dict(dets)
    kept["ignore"] = np.zeros(len(dets["scores"]), np.int64)
    keys = group_keys(source)
    if len(keys) == 0 or len(dets["scores"]) == 0:
        return kept
    _, top = segment_minmax(keys, source["scores"])
    cand = (top > 0) & (source["scores"] >= rel_score * top)
    src_img, sel_img = image_index(source), image_index(dets)
    cand &= np.isin(src_img, sel_img)  # only images that keep a pseudo box
    # not the selected boxes themselves (same image, class and coordinates)
    i, j = _same_image_pairs(src_img, sel_img)
    same = (source["labels"][i] == dets["labels"][j]) & np.all(
        source["bboxes"][i] == dets["bboxes"][j], axis=1
    )
    cand[i[same]] = False
    # not over a selected box: intersection / selected area <= max_overlap
    inter, _, area_sel = pair_iou(dets["bboxes"][j], source["bboxes"][i])
    over = inter > max_overlap * np.maximum(area_sel, 1e-9)
    cand[i[over]] = False
    regions = take(source, cand)
    regions["ignore"] = np.ones(int(cand.sum()), np.int64)
    out = {}
    for k, v in kept.items():
        if k in regions:
            out[k] = np.concatenate([v, regions[k]])
        elif k == "raw_scores":
            out[k] = np.concatenate([v, regions["scores"]])
        else:  # e.g. weights: a region is never trained on
            out[k] = np.concatenate([v, np.zeros((len(regions["scores"]), *v.shape[1:]), v.dtype)])
    return out
