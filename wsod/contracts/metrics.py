"""``metrics.json``: what ``wsod evaluate`` writes and ``wsod report`` reads."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from wsod.utils.io import read_json

from .core import fail

# --------------------------------------------------------------------------- metrics
METRICS_KEYS = {
    "split": str,
    "gt": str,
    "iou_thr": (int, float),
    "num_images": int,
    "num_gt_boxes": int,
    "classes": list,
    "caveats": list,
    "gt_note": str,
    "detectors": Mapping,
}
DETECTOR_ORDER = ("weak", "strong", "fsd")  # metrics.json lists these first, in this order
METRICS_DETECTOR_KEYS = ("file", "num_detections", "mAP_11points", "mAP_area", "per_class")
METRICS_CLASS_KEYS = ("class_id", "num_gt", "num_dets", "num_tp", "ap_11points", "ap_area", "pr")
_REGENERATE = "regenerate it with `wsod evaluate`"


def ordered_detectors(names: Iterable[str]) -> list[str]:
    """Detector names in ``metrics.json`` order: :data:`DETECTOR_ORDER` first, the others after."""
    names = list(names)
    first = [n for n in DETECTOR_ORDER if n in names]
    return first + [n for n in names if n not in first]


def _is_score(v: Any) -> bool:
    """A json metric value: a finite number, or None (nan / not defined)."""
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v))


def _validate_metric_entry(entry: Any, classes: set[str], where: str) -> None:
    """One detector entry of ``metrics.json`` (see :func:`validate_metrics`)."""
    if not isinstance(entry, Mapping):
        fail(where, f"must be a json object; {_REGENERATE}")
    for key in METRICS_DETECTOR_KEYS:
        if key not in entry:
            fail(where, f"missing key '{key}'; {_REGENERATE}")
    for key in ("mAP_11points", "mAP_area"):
        if not _is_score(entry[key]):
            fail(where, f"'{key}' must be a number or null, got {entry[key]!r}")
    if not _is_score((entry.get("coco") or {}).get("AP")):
        fail(where, f"'coco.AP' must be a number or null, got {entry['coco'].get('AP')!r}")
    per_class = entry["per_class"]
    if not isinstance(per_class, Mapping) or not set(per_class) <= classes:
        fail(where, f"'per_class' must map the file's 'classes' to entries; {_REGENERATE}")
    for name, c in per_class.items():
        missing = [k for k in METRICS_CLASS_KEYS if k not in c]
        if missing:
            fail(where, f"class {name!r} lacks {missing}; {_REGENERATE}")
        pr = c["pr"]
        if len(pr.get("recall", ())) != len(pr.get("precision", ())):
            fail(where, f"class {name!r}: pr recall and precision differ in length")


def validate_metrics(metrics: Any, where: str = "metrics") -> dict:
    """Check ``eval/metrics.json``: written by ``wsod evaluate``, read by ``wsod report``.

    Required: ``split``, ``gt``, ``iou_thr``, ``num_images``, ``num_gt_boxes``, ``classes``
    (names in category-id order), ``caveats`` (what the data lacks), ``gt_note`` and
    ``detectors`` ``{name: {file, num_detections, mAP_11points, mAP_area, [coco {AP, ...}],
    per_class {class name: {class_id, num_gt, num_dets, num_tp, ap_11points, ap_area,
    [coco_ap], max_recall, pr {recall, precision}}}}}`` (a metric is a number, or null when it
    is not defined). Optional: ``ratios`` ``{"<name>/weak": {mAP_11points, mAP_area, coco_AP,
    lowered}}`` and ``train`` ``{gt, split, num_images, detectors {name: {file, corloc, ...}},
    [pseudo_labels {file, num_boxes, ...: a detector entry plus box precision / recall}]}``.
    """
    if not isinstance(metrics, Mapping):
        fail(where, f"metrics must be a json object; {_REGENERATE}")
    for key, kind in METRICS_KEYS.items():
        if key not in metrics:
            fail(where, f"missing key '{key}'; {_REGENERATE}")
        if not isinstance(metrics[key], kind):
            fail(where, f"'{key}' has the wrong type ({type(metrics[key]).__name__})")
    classes = set(metrics["classes"])
    for name, entry in metrics["detectors"].items():
        _validate_metric_entry(entry, classes, f"{where}: detector {name!r}")
    for name, r in (metrics.get("ratios") or {}).items():
        if not isinstance(r, Mapping) or not isinstance(r.get("lowered"), bool):
            fail(where, f"ratio {name!r} needs a boolean 'lowered'; {_REGENERATE}")
    train = metrics.get("train")
    if train is not None:
        for key in ("gt", "split", "num_images", "detectors"):
            if key not in train:
                fail(where, f"'train' lacks '{key}'; {_REGENERATE}")
        for name, entry in train["detectors"].items():
            if "file" not in entry or not _is_score(entry.get("corloc")):
                fail(where, f"train detector {name!r} needs 'file' and a 'corloc' number")
        pl = train.get("pseudo_labels")
        if pl is not None:
            _validate_metric_entry(pl, classes, f"{where}: train pseudo_labels")
    return dict(metrics)


def load_metrics(path: str | os.PathLike) -> dict:
    """Read and validate ``metrics.json`` (the report's only required input)."""
    return validate_metrics(read_json(path), where=str(path))
