"""The formats the stages exchange, with one validator each (used on write and on read).

Box convention inside the code: absolute pixels, float, ``x1, y1, x2, y2``, 0-based. Files use
COCO's ``x, y, w, h``; conversion happens only here and in the dataset loaders/exporters.

| artifact         | file                         | format                                               |
|------------------|------------------------------|------------------------------------------------------|
| dataset split    | ``<split>.json``             | COCO-style ``images`` (+ per image ``labels``),      |
|                  |                              | ``categories``, ``info.data_root``; **no boxes**     |
| eval-only boxes  | ``<split>_gt.json``          | COCO instances json (+ ``difficult`` per box)        |
| proposals        | ``*.pkl`` / ``*.npz``        | mmdet proposal contract: ``{file_name: {"bboxes":    |
|                  |                              | float32 (N,4) x1y1x2y2, "scores": float32 (N,)}}``   |
| weak detections  | ``*.json``                   | COCO results list (image_id, category_id, bbox, score)|
| pseudo labels    | ``*.json``                   | COCO instances json, ``score`` (and ``weight``) kept  |

A split's ``file_name`` is relative to ``info.data_root`` (for VOC: ``JPEGImages/000005.jpg``,
which is also the key mmdet's ``load_proposals`` derives from an image path).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from wsod.utils.io import read_json


class ContractError(ValueError):
    """An artifact does not follow its contract; the message names the file and the fix."""


def _fail(where: str, msg: str) -> None:
    raise ContractError(f"{where}: {msg}")


# --------------------------------------------------------------------------- boxes
def xywh_to_xyxy(boxes: np.ndarray) -> np.ndarray:
    """(N,4) COCO ``x, y, w, h`` -> (N,4) ``x1, y1, x2, y2`` (float64)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    b[:, 2:] += b[:, :2]
    return b


def xyxy_to_xywh(boxes: np.ndarray) -> np.ndarray:
    """(N,4) ``x1, y1, x2, y2`` -> (N,4) COCO ``x, y, w, h`` (float64)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    b[:, 2:] -= b[:, :2]
    return b


# --------------------------------------------------------------------------- split
def validate_categories(cats: Any, where: str) -> dict[int, str]:
    if not isinstance(cats, list) or not cats:
        _fail(where, "'categories' must be a non-empty list of {id, name}")
    out: dict[int, str] = {}
    for c in cats:
        if not isinstance(c, Mapping) or "id" not in c or "name" not in c:
            _fail(where, f"bad category entry {c!r}: needs 'id' and 'name'")
        if c["id"] in out:
            _fail(where, f"duplicate category id {c['id']}")
        out[int(c["id"])] = str(c["name"])
    return out


def validate_split(split: Any, where: str = "split") -> dict:
    """Check a weak-label split (training side). Returns it unchanged.

    Required: ``images`` [{id, file_name, width, height, labels: [category ids]}],
    ``categories`` [{id, name}], ``info`` {data_root, split}. It must carry no boxes: training
    stages read this file, and weak supervision means they never see a ground-truth box.
    """
    if not isinstance(split, Mapping):
        _fail(where, "a split must be a json object")
    if "annotations" in split:
        _fail(
            where,
            "a weak-label split must not contain 'annotations' (boxes belong in the "
            "eval-only <split>_gt.json); regenerate it with `wsod data`",
        )
    for key in ("images", "categories", "info"):
        if key not in split:
            _fail(where, f"missing key '{key}'; regenerate it with `wsod data`")
    cats = validate_categories(split["categories"], where)
    if "data_root" not in split["info"]:
        _fail(where, "info.data_root is missing")
    images = split["images"]
    if not isinstance(images, list) or not images:
        _fail(where, "the split has no images")
    seen: set[int] = set()
    for im in images:
        for key in ("id", "file_name", "width", "height", "labels"):
            if key not in im:
                _fail(where, f"image {im.get('id', '?')} lacks '{key}'")
        for key in ("bbox", "bboxes", "boxes", "gt_bboxes", "instances"):
            if key in im:
                _fail(where, f"image {im['id']} carries '{key}': splits must not carry boxes")
        if im["id"] in seen:
            _fail(where, f"duplicate image id {im['id']}")
        seen.add(im["id"])
        bad = [c for c in im["labels"] if c not in cats]
        if bad:
            _fail(where, f"image {im['id']} ({im['file_name']}) has unknown category ids {bad}")
    return dict(split)


def validate_gt(gt: Any, where: str = "ground truth") -> dict:
    """Check an eval-only COCO instances file (``annotations`` with ``bbox`` xywh)."""
    if not isinstance(gt, Mapping):
        _fail(where, "ground truth must be a json object")
    for key in ("images", "categories", "annotations"):
        if key not in gt:
            _fail(where, f"missing key '{key}'")
    cats = validate_categories(gt["categories"], where)
    ids = {im["id"] for im in gt["images"]}
    for a in gt["annotations"]:
        if a.get("image_id") not in ids:
            _fail(where, f"annotation {a.get('id')} refers to unknown image {a.get('image_id')}")
        if a.get("category_id") not in cats:
            _fail(where, f"annotation {a.get('id')} has unknown category {a.get('category_id')}")
        bbox = a.get("bbox")
        if not isinstance(bbox, list) or len(bbox) != 4 or bbox[2] < 0 or bbox[3] < 0:
            _fail(
                where, f"annotation {a.get('id')} has a bad bbox {bbox!r} (want x, y, w>=0, h>=0)"
            )
    return dict(gt)


# --------------------------------------------------------------------------- detections
def validate_detections(dets: Any, split: Mapping | None = None, where: str = "detections") -> list:
    """Check a COCO results list; with ``split``, image and category ids must exist there.

    Vectorised: a VOC-sized file (1.5M entries) validates in a few seconds.
    """
    if not isinstance(dets, list):
        _fail(where, "detections must be a json list of {image_id, category_id, bbox, score}")
    if not dets:
        return []
    try:
        img = np.fromiter((d["image_id"] for d in dets), dtype=np.int64, count=len(dets))
        cat = np.fromiter((d["category_id"] for d in dets), dtype=np.int64, count=len(dets))
        score = np.fromiter((d["score"] for d in dets), dtype=np.float64, count=len(dets))
        box = np.array([d["bbox"] for d in dets], dtype=np.float64)
    except (KeyError, TypeError) as e:
        bad = next(
            i
            for i, d in enumerate(dets)
            if not isinstance(d, Mapping)
            or not {"image_id", "category_id", "bbox", "score"} <= d.keys()
        )
        _fail(where, f"entry {bad} lacks one of image_id, category_id, bbox, score ({e!r})")
    except ValueError:
        bad = next(i for i, d in enumerate(dets) if np.shape(d["bbox"]) != (4,))
        _fail(where, f"entry {bad} has a bad bbox {dets[bad]['bbox']!r} (want 4 numbers)")
    bad_box = ~np.isfinite(box).all(1) | (box[:, 2] < 0) | (box[:, 3] < 0)
    if bad_box.any():
        i = int(np.flatnonzero(bad_box)[0])
        _fail(where, f"entry {i} has a bad bbox {dets[i]['bbox']!r} (want x, y, w>=0, h>=0)")
    if not np.isfinite(score).all():
        _fail(where, f"entry {int(np.flatnonzero(~np.isfinite(score))[0])} has a non-finite score")
    if split:
        img_ids = np.array([im["id"] for im in split["images"]], dtype=np.int64)
        cat_ids = np.array([c["id"] for c in split["categories"]], dtype=np.int64)
        bad_img = np.setdiff1d(img, img_ids)
        if bad_img.size:
            _fail(where, f"{bad_img.size} image ids not in the split, e.g. {bad_img[:5].tolist()}")
        bad_cat = np.setdiff1d(cat, cat_ids)
        if bad_cat.size:
            _fail(where, f"unknown category ids {bad_cat.tolist()}")
    return dets


def detections_by_image(dets: Iterable[Mapping]) -> dict[int, dict[str, np.ndarray]]:
    """Group COCO results into arrays per image.

    Returns:
        ``{image_id: {"bboxes": (N,4) float64 x1y1x2y2, "scores": (N,), "labels": (N,) int}}``
    """
    grouped: dict[int, list] = {}
    for d in dets:
        grouped.setdefault(int(d["image_id"]), []).append(d)
    out = {}
    for img_id, ds in grouped.items():
        out[img_id] = {
            "bboxes": xywh_to_xyxy(np.array([d["bbox"] for d in ds], dtype=np.float64)),
            "scores": np.array([d["score"] for d in ds], dtype=np.float64),
            "labels": np.array([d["category_id"] for d in ds], dtype=np.int64),
        }
    return out


def make_detections(
    image_id: int, bboxes: np.ndarray, scores: np.ndarray, labels: np.ndarray
) -> list[dict]:
    """Arrays (x1y1x2y2) of one image -> COCO results entries (xywh, rounded to 0.01 px)."""
    xywh = xyxy_to_xywh(bboxes)
    return [
        {
            "image_id": int(image_id),
            "category_id": int(c),
            "bbox": [round(float(v), 2) for v in b],
            "score": round(float(s), 6),
        }
        for b, s, c in zip(xywh, np.asarray(scores), np.asarray(labels), strict=True)
    ]


# --------------------------------------------------------------------------- pseudo labels
def validate_pseudo_labels(pl: Any, where: str = "pseudo labels") -> dict:
    """Pseudo labels are a COCO instances file whose annotations also carry ``score``."""
    validate_gt(pl, where)
    for a in pl["annotations"]:
        if "score" not in a:
            _fail(where, f"annotation {a.get('id')} lacks 'score'")
    return dict(pl)


# --------------------------------------------------------------------------- proposals
def validate_proposals(
    props: Any, where: str = "proposals", file_names: Iterable[str] | None = None
) -> dict:
    """Check the mmdet proposal contract; with ``file_names``, every image must have an entry."""
    if not isinstance(props, Mapping):
        _fail(where, "proposals must be a dict keyed by image file name")
    for key, p in props.items():
        if not isinstance(p, Mapping) or "bboxes" not in p:
            _fail(where, f"entry {key!r} must be a dict with 'bboxes' (and 'scores')")
        b = np.asarray(p["bboxes"])
        if b.ndim != 2 or b.shape[1] != 4:
            _fail(where, f"entry {key!r}: bboxes must be (N,4), got {b.shape}")
        if len(b) and np.any(b[:, 2:] < b[:, :2]):
            _fail(where, f"entry {key!r}: boxes must be x1,y1,x2,y2 with x2>=x1, y2>=y1")
        if "scores" in p and np.asarray(p["scores"]).shape != (len(b),):
            _fail(where, f"entry {key!r}: scores must be (N,) matching bboxes")
    if file_names is not None:
        missing = [f for f in file_names if f not in props]
        if missing:
            _fail(where, f"{len(missing)} images have no proposals, e.g. {missing[:3]}")
    return dict(props)


# --------------------------------------------------------------------------- readers
def load_split(path: str | os.PathLike) -> dict:
    """Read and validate a weak-label split (the only dataset file training stages read)."""
    return validate_split(read_json(path), where=str(path))


def load_detections(path: str | os.PathLike, split: Mapping | None = None) -> list:
    return validate_detections(read_json(path), split, where=str(path))


def load_pseudo_labels(path: str | os.PathLike) -> dict:
    return validate_pseudo_labels(read_json(path), where=str(path))


def resolve_data_root(
    split: Mapping, split_path: str | os.PathLike, data_root: str | os.PathLike | None = None
) -> Path:
    """Where the split's ``file_name`` paths start.

    ``data_root`` (argument) wins; else ``info.data_root``: absolute as is, relative first to
    the current directory, then to the split file's folder.
    """
    if data_root is not None:
        return Path(data_root)
    root = Path(split["info"]["data_root"])
    if root.is_absolute() or root.is_dir():
        return root
    alt = Path(split_path).parent / root
    return alt if alt.is_dir() else root


def category_names(split: Mapping) -> list[str]:
    """Class names ordered by category id."""
    return [c["name"] for c in sorted(split["categories"], key=lambda c: c["id"])]


# --------------------------------------------------------------------------- strong stage's training boxes
# (box weights and ``strong/train_annotations.json``; kept together at the end of the module)
def box_weight(ann: Mapping, *, fully_supervised: bool = False) -> float:
    """The training weight of one box: its ``weight``; else, for a pseudo label, its
    ``score``; else 1.0. Real boxes (``fully_supervised``) weigh 1.0 unless they say otherwise.

    The one definition used where training annotations are written (the strong stage) and where
    they are read into ``gt_instances.weights`` (``wsod.models.strong.box_weight_data``).
    """
    if "weight" in ann and ann["weight"] is not None:
        return float(ann["weight"])
    if not fully_supervised and ann.get("score") is not None:
        return float(ann["score"])
    return 1.0


TRAIN_ANNOTATION_KEYS = (
    "id",
    "image_id",
    "category_id",
    "bbox",
    "area",
    "iscrowd",
    "score",
    "weight",
)
"""Keys of every annotation in the strong stage's ``train_annotations.json``."""


def validate_train_annotations(data: Any, where: str = "training annotations") -> dict:
    """Check the strong stage's ``[fsd_]train_annotations.json`` (what mmdet's ``CocoDataset``
    trains on): a COCO instances file (:func:`validate_gt`) whose images have ``id,
    file_name, width, height``, whose categories are ids ``1..K``, and whose annotations have
    unique ids and :data:`TRAIN_ANNOTATION_KEYS` with ``area = w * h``, ``iscrowd`` 0/1 and
    finite ``score`` and ``weight >= 0``. Returns it unchanged."""
    validate_gt(data, where)
    for im in data["images"]:
        missing = [k for k in ("id", "file_name", "width", "height") if k not in im]
        if missing:
            _fail(where, f"image {im.get('id')} lacks {missing}; rerun `wsod strong`")
    ids = sorted(int(c["id"]) for c in data["categories"])
    if ids != list(range(1, len(ids) + 1)):
        _fail(where, f"category ids must be 1..K, got {ids}; regenerate the split")
    seen: set = set()
    for a in data["annotations"]:
        missing = [k for k in TRAIN_ANNOTATION_KEYS if k not in a]
        if missing:
            _fail(where, f"annotation {a.get('id')} lacks {missing}; rerun `wsod strong`")
        if a["id"] in seen:
            _fail(where, f"duplicate annotation id {a['id']}")
        seen.add(a["id"])
        w, h = (float(v) for v in a["bbox"][2:])
        if not np.isclose(float(a["area"]), w * h, rtol=1e-6, atol=1e-6):
            _fail(where, f"annotation {a['id']}: area {a['area']} != w * h = {w * h}")
        if a["iscrowd"] not in (0, 1):
            _fail(where, f"annotation {a['id']}: iscrowd must be 0 or 1, got {a['iscrowd']!r}")
        score, weight = float(a["score"]), float(a["weight"])
        if not (np.isfinite(score) and np.isfinite(weight) and weight >= 0):
            _fail(
                where,
                f"annotation {a['id']}: score {score} / weight {weight} (want finite, weight >= 0)",
            )
    return dict(data)


def load_train_annotations(path: str | os.PathLike) -> dict:
    """Read and validate a strong stage's ``train_annotations.json``."""
    return validate_train_annotations(read_json(path), where=str(path))
