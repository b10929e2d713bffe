"""The formats the stages exchange, with one validator each: boxes, splits, ground truth,
detections, pseudo labels, proposals, and their readers (see :mod:`wsod.contracts`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.utils.io import read_json


class ContractError(ValueError):
    """An artifact does not follow its contract; the message names the file and the fix."""


def fail(where: str, msg: str) -> None:
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


def is_ignored(ann: Mapping) -> bool:
    """The one ignore rule of an annotation (ground truth or pseudo label): a box flagged
    ``difficult`` (VOC) or ``iscrowd`` (COCO; a de-noise ignore region) is ignored.

    An ignored box is neither a hit nor a miss: detections matching it are neither true nor
    false positives, it does not count in recall (VOC AP, COCO AP, box precision / recall), and
    mmdet trains on it as an ignored instance (``iscrowd`` 1).
    """
    return bool(ann.get("difficult", 0) or ann.get("iscrowd", 0))


# --------------------------------------------------------------------------- split
# The one size rule of the pipeline: an image's width and height, and every box on it, are those
# of the image as displayed, with its EXIF orientation applied (a phone photo stored 4000x3000
# with orientation 6 is 3000x4000), as OpenCV's ``imread`` and mmcv's loaders give its pixels.
# A split records it as ``info.image_sizes``; splits written before the rule lack the key.
IMAGE_SIZES = "displayed"


def validate_categories(cats: Any, where: str) -> dict[int, str]:
    if not isinstance(cats, list) or not cats:
        fail(where, "'categories' must be a non-empty list of {id, name}")
    out: dict[int, str] = {}
    for c in cats:
        if not isinstance(c, Mapping) or "id" not in c or "name" not in c:
            fail(where, f"bad category entry {c!r}: needs 'id' and 'name'")
        if c["id"] in out:
            fail(where, f"duplicate category id {c['id']}")
        out[int(c["id"])] = str(c["name"])
    return out


def validate_split(split: Any, where: str = "split") -> dict:
    """Check a weak-label split (training side). Returns it unchanged.

    Required: ``images`` [{id, file_name, width, height, labels: [category ids]}],
    ``categories`` [{id, name}], ``info`` {data_root, split}. It must carry no boxes: training
    stages read this file, and weak supervision means they never see a ground-truth box.
    ``info.image_sizes``, when present, must be :data:`IMAGE_SIZES` (width and height as
    displayed; the proposals stage checks each image's pixels against them).
    """
    if not isinstance(split, Mapping):
        fail(where, "a split must be a json object")
    if "annotations" in split:
        fail(
            where,
            "a weak-label split must not contain 'annotations' (boxes belong in the "
            "eval-only <split>_gt.json); regenerate it with `wsod data`",
        )
    for key in ("images", "categories", "info"):
        if key not in split:
            fail(where, f"missing key '{key}'; regenerate it with `wsod data`")
    cats = validate_categories(split["categories"], where)
    if "data_root" not in split["info"]:
        fail(where, "info.data_root is missing")
    sizes = split["info"].get("image_sizes", IMAGE_SIZES)
    if sizes != IMAGE_SIZES:
        fail(
            where,
            f"info.image_sizes is {sizes!r}: image sizes must be {IMAGE_SIZES!r} (EXIF "
            "orientation applied, as every stage reads the pixels); rewrite it with `wsod data`",
        )
    images = split["images"]
    if not isinstance(images, list) or not images:
        fail(where, "the split has no images")
    seen: set[int] = set()
    for im in images:
        for key in ("id", "file_name", "width", "height", "labels"):
            if key not in im:
                fail(where, f"image {im.get('id', '?')} lacks '{key}'")
        for key in ("bbox", "bboxes", "boxes", "gt_bboxes", "instances"):
            if key in im:
                fail(where, f"image {im['id']} carries '{key}': splits must not carry boxes")
        if im["id"] in seen:
            fail(where, f"duplicate image id {im['id']}")
        seen.add(im["id"])
        bad = [c for c in im["labels"] if c not in cats]
        if bad:
            fail(where, f"image {im['id']} ({im['file_name']}) has unknown category ids {bad}")
    return dict(split)


def validate_gt(gt: Any, where: str = "ground truth") -> dict:
    """Check an eval-only COCO instances file (``annotations`` with ``bbox`` xywh)."""
    if not isinstance(gt, Mapping):
        fail(where, "ground truth must be a json object")
    for key in ("images", "categories", "annotations"):
        if key not in gt:
            fail(where, f"missing key '{key}'")
    cats = validate_categories(gt["categories"], where)
    ids = {im["id"] for im in gt["images"]}
    for a in gt["annotations"]:
        if a.get("image_id") not in ids:
            fail(where, f"annotation {a.get('id')} refers to unknown image {a.get('image_id')}")
        if a.get("category_id") not in cats:
            fail(where, f"annotation {a.get('id')} has unknown category {a.get('category_id')}")
        bbox = a.get("bbox")
        if not isinstance(bbox, list) or len(bbox) != 4 or bbox[2] < 0 or bbox[3] < 0:
            fail(where, f"annotation {a.get('id')} has a bad bbox {bbox!r} (want x, y, w>=0, h>=0)")
    return dict(gt)


# --------------------------------------------------------------------------- detections
def validate_detections(dets: Any, split: Mapping | None = None, where: str = "detections") -> list:
    """Check a COCO results list; with ``split``, image and category ids must exist there.

    Vectorised: a VOC-sized file (1.5M entries) validates in a few seconds.
    """
    if not isinstance(dets, list):
        fail(where, "detections must be a json list of {image_id, category_id, bbox, score}")
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
        fail(where, f"entry {bad} lacks one of image_id, category_id, bbox, score ({e!r})")
    except ValueError:
        bad = next(i for i, d in enumerate(dets) if np.shape(d["bbox"]) != (4,))
        fail(where, f"entry {bad} has a bad bbox {dets[bad]['bbox']!r} (want 4 numbers)")
    bad_box = ~np.isfinite(box).all(1) | (box[:, 2] < 0) | (box[:, 3] < 0)
    if bad_box.any():
        i = int(np.flatnonzero(bad_box)[0])
        fail(where, f"entry {i} has a bad bbox {dets[i]['bbox']!r} (want x, y, w>=0, h>=0)")
    if not np.isfinite(score).all():
        fail(where, f"entry {int(np.flatnonzero(~np.isfinite(score))[0])} has a non-finite score")
    if split:
        img_ids = np.array([im["id"] for im in split["images"]], dtype=np.int64)
        cat_ids = np.array([c["id"] for c in split["categories"]], dtype=np.int64)
        bad_img = np.setdiff1d(img, img_ids)
        if bad_img.size:
            fail(where, f"{bad_img.size} image ids not in the split, e.g. {bad_img[:5].tolist()}")
        bad_cat = np.setdiff1d(cat, cat_ids)
        if bad_cat.size:
            fail(where, f"unknown category ids {bad_cat.tolist()}")
    return dets


def detections_to_arrays(dets: Iterable[Mapping]) -> dict[str, np.ndarray]:
    """COCO results list -> flat arrays, one row per detection, in the input order.

    The one converter from the detection format to the code's box convention (xywh ->
    x1y1x2y2); :func:`detections_by_image` groups its rows per image.

    Returns:
        ``{"image_ids": (N,) int64, "bboxes": (N,4) float64 x1y1x2y2, "scores": (N,) float64,
        "labels": (N,) int64 category ids}``.
    """
    if not isinstance(dets, Sequence):
        dets = list(dets)
    n = len(dets)
    if not n:
        return {
            "image_ids": np.zeros(0, np.int64),
            "bboxes": np.zeros((0, 4)),
            "scores": np.zeros(0),
            "labels": np.zeros(0, np.int64),
        }
    return {
        "image_ids": np.fromiter((d["image_id"] for d in dets), np.int64, n),
        "bboxes": xywh_to_xyxy(np.array([d["bbox"] for d in dets], np.float64)),
        "scores": np.fromiter((d["score"] for d in dets), np.float64, n),
        "labels": np.fromiter((d["category_id"] for d in dets), np.int64, n),
    }


def group_by_image(
    arrays: Mapping[str, np.ndarray], key: str = "image_ids"
) -> dict[int, dict[str, np.ndarray]]:
    """Flat arrays (one row per box) -> ``{image_id: {name: rows of that image}}``.

    One stable sort: rows keep their input order within an image; images come in id order.
    The ``key`` column itself is dropped from the groups.
    """
    ids = np.asarray(arrays[key], np.int64)
    if len(ids) == 0:
        return {}
    order = np.argsort(ids, kind="stable")
    srt = ids[order]
    cuts = np.flatnonzero(np.diff(srt)) + 1
    starts, ends = np.r_[0, cuts], np.r_[cuts, len(srt)]
    cols = {k: np.asarray(v)[order] for k, v in arrays.items() if k != key}
    return {
        int(srt[a]): {k: v[a:e] for k, v in cols.items()} for a, e in zip(starts, ends, strict=True)
    }


def detections_by_image(dets: Iterable[Mapping]) -> dict[int, dict[str, np.ndarray]]:
    """Group COCO results into arrays per image (rows of :func:`detections_to_arrays`).

    Returns:
        ``{image_id: {"bboxes": (N,4) float64 x1y1x2y2, "scores": (N,), "labels": (N,) int}}``
    """
    return group_by_image(detections_to_arrays(dets))


def pseudo_label_detections(pl: Mapping) -> list[dict]:
    """The boxes of a pseudo-label (COCO instances) dict as a COCO results list.

    ``score`` is the annotation's score (1.0 when absent), so pseudo labels are ranked and
    scored by the same code as detectors.
    """
    return [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": a["bbox"],
            "score": float(a.get("score", 1.0)),
        }
        for a in pl["annotations"]
    ]


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
def ground_truth_marks(data: Mapping) -> list[str]:
    """What marks a COCO instances file as a split's eval-only ground truth, by its content (not
    its name): ``info.eval_only`` (the data stage writes it into every ``<split>_gt.json``) or a
    ``difficult`` flag on every box (a field of ground truth that de-noised pseudo labels never
    carry; it survives copying the file or adding scores to it). Empty: no mark found."""
    marks = []
    if isinstance(data.get("info"), Mapping) and data["info"].get("eval_only"):
        marks.append("info.eval_only is true")
    anns = data.get("annotations") or []
    if anns and all(isinstance(a, Mapping) and "difficult" in a for a in anns):
        marks.append("every box has the ground-truth field 'difficult'")
    return marks


def validate_pseudo_labels(pl: Any, where: str = "pseudo labels") -> dict:
    """Pseudo labels are a COCO instances file whose annotations also carry ``score``."""
    validate_gt(pl, where)
    for a in pl["annotations"]:
        if "score" not in a:
            fail(where, f"annotation {a.get('id')} lacks 'score'")
    return dict(pl)


# --------------------------------------------------------------------------- proposals
def validate_proposals(
    props: Any, where: str = "proposals", file_names: Iterable[str] | None = None
) -> dict:
    """Check the mmdet proposal contract; with ``file_names``, every image must have an entry."""
    if not isinstance(props, Mapping):
        fail(where, "proposals must be a dict keyed by image file name")
    for key, p in props.items():
        if not isinstance(p, Mapping) or "bboxes" not in p:
            fail(where, f"entry {key!r} must be a dict with 'bboxes' (and 'scores')")
        b = np.asarray(p["bboxes"])
        if b.ndim != 2 or b.shape[1] != 4:
            fail(where, f"entry {key!r}: bboxes must be (N,4), got {b.shape}")
        if len(b) and np.any(b[:, 2:] < b[:, :2]):
            fail(where, f"entry {key!r}: boxes must be x1,y1,x2,y2 with x2>=x1, y2>=y1")
        if "scores" in p and np.asarray(p["scores"]).shape != (len(b),):
            fail(where, f"entry {key!r}: scores must be (N,) matching bboxes")
    if file_names is not None:
        missing = [f for f in file_names if f not in props]
        if missing:
            fail(where, f"{len(missing)} images have no proposals, e.g. {missing[:3]}")
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
