"""COCO-style AP (IoU 0.50:0.95) with pycocotools' ``COCOeval`` on a gt dict + COCO results.

Inputs: the eval-only ground truth (COCO instances dict or path) and a COCO results list
(``image_id``, ``category_id``, ``bbox`` xywh, ``score``). pycocotools' prints are captured.

Ignored ground-truth boxes (:func:`wsod.contracts.is_ignored`: ``difficult`` or
``iscrowd``) are handed to ``COCOeval`` as ``iscrowd=1``, the COCO way to mark regions whose
detections are neither rewarded nor punished (the closest analogue of VOC's difficult).
``area`` is filled with ``w * h`` where missing. ``maxDets`` is COCO's 100 per image.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

from wsod.contracts import is_ignored
from wsod.evaluation.gt import load_gt

STAT_NAMES = (
    "AP",
    "AP50",
    "AP75",
    "APs",
    "APm",
    "APl",
    "AR1",
    "AR10",
    "AR100",
    "ARs",
    "ARm",
    "ARl",
)


def _coco_gt(gt: Mapping):
    from pycocotools.coco import COCO

    data = copy.deepcopy(dict(gt))
    for i, a in enumerate(data["annotations"]):
        a.setdefault("id", i + 1)
        a.setdefault("area", float(a["bbox"][2] * a["bbox"][3]))
        a["iscrowd"] = int(is_ignored(a))
    coco = COCO()
    coco.dataset = data
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def coco_ap(gt: Mapping | str | os.PathLike, detections: Sequence[Mapping]) -> dict[str, Any]:
    """COCO box AP of detections.

    Args:
        gt: COCO instances dict or path of the eval-only gt file.
        detections: COCO results list (xywh boxes).

    Returns:
        ``{"AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", ..., "per_class": {category_id: AP
        at 0.50:0.95 or nan when the class has no GT}, "log": pycocotools' printed summary}``.
        With no detections every figure is 0.
    """
    from pycocotools.cocoeval import COCOeval

    if not isinstance(gt, Mapping):
        gt = load_gt(gt)
    cat_ids = sorted(int(c["id"]) for c in gt["categories"])
    gt_cats = {int(a["category_id"]) for a in gt["annotations"]}
    if len(detections) == 0 or not gt["annotations"]:
        out: dict[str, Any] = dict.fromkeys(STAT_NAMES, 0.0)
        out["per_class"] = {c: (0.0 if c in gt_cats else float("nan")) for c in cat_ids}
        out["log"] = "no detections" if gt["annotations"] else "no ground truth"
        return out
    coco = _coco_gt(gt)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = coco.loadRes([dict(d) for d in detections])
        ev = COCOeval(coco, res, iouType="bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    out = {name: max(float(v), 0.0) for name, v in zip(STAT_NAMES, ev.stats, strict=True)}
    # precision: [T iou thrs, R recall levels, K classes, A area ranges, M maxDets]
    prec = ev.eval["precision"][:, :, :, 0, -1]
    per_class = {}
    for k, c in enumerate(ev.params.catIds):
        p = prec[:, :, k]
        p = p[p > -1]
        per_class[int(c)] = float(p.mean()) if p.size else float("nan")
    out["per_class"] = {c: per_class.get(c, float("nan")) for c in cat_ids}
    out["log"] = buf.getvalue()
    return out
