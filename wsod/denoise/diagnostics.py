"""LABELLED DIAGNOSTIC: pseudo-label quality and the de-noise ablation against reference boxes.

This is the one module of :mod:`wsod.denoise` allowed to read eval-only ground truth (a
``<split>_gt.json`` the user passes explicitly as ``--quality-gt``). Its numbers go to
``<out>.quality.json`` / ``<out>.ablation.json`` and the printed tables only: nothing here
chooses, filters or weights a pseudo box. Only the de-noise stage's diagnostic path imports it
(``tests/stages/test_leakage.py`` checks that no other training-side module does).

Measures (:mod:`wsod.evaluation.localization`, IoU > 0.5): box precision / recall, CorLoc and
boxes per image, per class and overall, of the pseudo labels, of the raw detections (label
consistency only) and, in the ablation, of several chains on the same detections; the ablation
also breaks each chain's boxes down by how they fail (:func:`error_breakdown`: the share holding
two or more objects of their class, or one object plus too much around it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from wsod.denoise.chain import (
    ABLATION_CHAINS,
    build_chain,
    denoise_arrays,
    describe_chain,
    flatten,
    parse_strategies,
)
from wsod.denoise.labels import pseudo_boxes
from wsod.evaluation.gt import gt_to_arrays, load_gt
from wsod.evaluation.localization import localization_quality
from wsod.utils.boxes import box_area, box_intersection, box_iou

NOTE = "diagnosis only: reference boxes were not used to choose pseudo labels"
IOU_THR = 0.5
#: Error types of :func:`classify_boxes`, in the order the first matching one wins.
ERROR_ROWS = (
    "correct",
    "too big, 1 object",
    "too big, 2+ objects",
    "part",
    "misplaced",
    "background",
    "label without box",
)
COVER = 0.7  # share of an object (or of the box) that counts as held (or as inside)


def labelled_pairs(images: Sequence[Mapping]) -> np.ndarray:
    """(K,2) int64 (image_id, category_id) for every image-level label of the split."""
    rows = [(int(im["id"]), int(c)) for im in images for c in set(im["labels"])]
    return np.array(rows, np.int64).reshape(-1, 2)


def reference_boxes(
    path: str | os.PathLike, images: Sequence[Mapping], split: str | os.PathLike
) -> dict[str, np.ndarray]:
    """The reference boxes of ``path`` restricted to the split's images.

    Raises:
        ValueError: the file has no boxes or boxes for some images only (tags-only data), or an
            image of the split is not in it.
    """
    gt = load_gt(path)
    info = gt.get("info") or {}
    if info.get("has_boxes") is False or info.get("boxed_images") is not None:
        some = info.get("boxed_images")
        which = "no image" if some is None else f"{len(some)} images only"
        raise ValueError(
            f"{path}: reference boxes for {which} (tags-only data), so the pseudo-label quality "
            "cannot be measured on the split; leave out --quality-gt / --ablate, or give boxes for "
            "every image of the split (`wsod data --boxes FILE`)"
        )
    ref = gt_to_arrays(gt)
    ids = np.array([im["id"] for im in images], np.int64)
    if not np.isin(ids, ref["image_set"]).all():
        missing = int((~np.isin(ids, ref["image_set"])).sum())
        raise ValueError(
            f"{path}: {missing} images of {split} are not in this "
            "reference file; pass the reference boxes of the same split"
        )
    sel = np.isin(ref["image_ids"], ids)
    return {k: (v[sel] if k != "image_set" else v) for k, v in ref.items()}


def scored(results: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Flat arrays for the metrics (pseudo boxes only), ranking by the detector's score
    (``raw_scores`` if kept)."""
    flat = flatten(pseudo_boxes(results))
    if "raw_scores" in flat:
        flat["scores"] = flat["raw_scores"]
    return flat


def classify_boxes(boxes: np.ndarray, gts: np.ndarray, cover: float = COVER) -> list[str]:
    """The error type (:data:`ERROR_ROWS`) of each of the (N,4) x1y1x2y2 ``boxes`` of one class in
    one image against the (M,4) reference boxes ``gts`` of that class and image.

    ``correct``: IoU >= 0.5 with one of them; ``too big, 2+ objects``: holds >= ``cover`` of the
    area of two or more; ``too big, 1 object``: of one; ``part``: >= ``cover`` of the box lies in
    one; ``misplaced``: 0.1 < best IoU < 0.5; ``background``: best IoU <= 0.1; ``label without
    box``: no reference box of the class in the image. The first match wins, in that order.
    """
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    if len(gts) == 0:
        return ["label without box"] * len(boxes)
    inter = box_intersection(boxes, gts)
    best = box_iou(boxes, gts).max(axis=1)
    held = (inter >= cover * np.maximum(box_area(gts), 1e-9)[None]).sum(axis=1)
    part = (inter >= cover * np.maximum(box_area(boxes), 1e-9)[:, None]).any(axis=1)
    kinds = np.select(
        [best >= 0.5, held >= 2, held == 1, part, best > 0.1],
        ["correct", "too big, 2+ objects", "too big, 1 object", "part", "misplaced"],
        "background",
    )
    return kinds.tolist()


def error_breakdown(flat: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict:
    """Counts of :data:`ERROR_ROWS` over flat boxes (``image_ids``, ``bboxes``, ``labels``)
    against every reference box (difficult ones included) of the same image and class.

    Returns:
        ``{"boxes": N, "counts": {row: n}, "shares": {row: n / N}}``.
    """
    counts = dict.fromkeys(ERROR_ROWS, 0)
    span = 1 << 24
    key = flat["image_ids"].astype(np.int64) * span + flat["labels"]
    ref_key = ref["image_ids"].astype(np.int64) * span + ref["labels"]
    ref_order = np.argsort(ref_key, kind="stable")
    ref_sorted = ref_key[ref_order]
    for k in np.unique(key):
        lo, hi = np.searchsorted(ref_sorted, [k, k + 1])
        kinds = classify_boxes(flat["bboxes"][key == k], ref["bboxes"][ref_order[lo:hi]])
        for kind in kinds:
            counts[kind] += 1
    n = len(key)
    return {
        "boxes": n,
        "counts": counts,
        "shares": {r: (c / n if n else None) for r, c in counts.items()},
    }


def quality(
    results: Mapping[int, Mapping[str, np.ndarray]],
    raw_results: Mapping[int, Mapping[str, np.ndarray]],
    images: Sequence[Mapping],
    ref: Mapping[str, np.ndarray],
) -> dict[str, Any]:
    """``{"raw": ..., "pseudo": ...}`` localisation quality
    (:func:`wsod.evaluation.localization.localization_quality`) of the raw detections and of
    the pseudo labels, over the split's labelled pairs."""
    pairs = labelled_pairs(images)
    return {
        "raw": localization_quality(flatten(raw_results), ref, pairs, len(images)),
        "pseudo": localization_quality(scored(results), ref, pairs, len(images)),
    }


def resolve_ablation(ablate: Any, main_chain: list[dict]) -> dict[str, list[dict]]:
    """``ablate`` (True: the built-in chains; a list; a dict name -> chain) -> named chains,
    with this run's chain added."""
    if ablate is True:
        chains = dict(ABLATION_CHAINS)
    elif isinstance(ablate, Mapping):
        chains = {str(k): parse_strategies(v) for k, v in ablate.items()}
    elif isinstance(ablate, (list, tuple)):
        chains = {f"chain{i}": parse_strategies(v) for i, v in enumerate(ablate)}
    else:
        raise ValueError(
            f"ablate must be True, a list of chains or a dict name -> chain; got {ablate!r}"
        )
    chains.setdefault("this run's chain", main_chain)
    return chains


def ablation(
    chains: Mapping[str, list[dict]],
    arrays: Mapping[str, np.ndarray],
    images: Sequence[Mapping],
    categories: Mapping[str, int],
    ref: Mapping[str, np.ndarray],
) -> list[dict]:
    """Run each chain on the same detections and score its pseudo labels.

    Args:
        chains: name -> strategy list (:func:`resolve_ablation`).
        arrays: flat detections (``image_ids``, ``bboxes``, ``scores``, ``labels``).
        images: split images; categories: name -> category id; ref: :func:`reference_boxes`.

    Returns:
        One row per chain: ``name``, ``chain``, ``seconds``, ``overall``, ``per_class``,
        ``errors`` (:func:`error_breakdown`). A built-in chain naming classes the dataset lacks
        gives ``skipped`` (the reason) and an empty ``overall`` instead.
    """
    flat = (arrays["image_ids"], arrays["bboxes"], arrays["scores"], arrays["labels"], images)
    pairs = labelled_pairs(images)
    rows = []
    for name, cfg in chains.items():
        ch = _built_in_or_build(name, cfg, categories)
        if isinstance(ch, str):
            rows.append({"name": name, "chain": cfg, "skipped": ch, "overall": {}})
            continue
        t0 = time.time()
        res = denoise_arrays(*flat, ch)
        dt = time.time() - t0
        boxes = scored(res)
        q = localization_quality(boxes, ref, pairs, len(images))
        rows.append(
            {
                "name": name,
                "chain": describe_chain(ch),
                "seconds": round(dt, 3),
                "overall": q["overall"],
                "per_class": q["per_class"],
                "errors": error_breakdown(boxes, ref),
            }
        )
    return rows


def _built_in_or_build(name: str, cfg: list[dict], categories: Mapping[str, int]) -> Any:
    """The built chain, or for a built-in chain whose ``exempt`` names classes the dataset
    lacks, the reason it is skipped (a chain the user wrote raises instead)."""
    try:
        return build_chain(cfg, categories)
    except ValueError as e:
        if "unknown class name" in str(e) and ABLATION_CHAINS.get(name) == cfg:
            return f"skipped: {e} (a chain for VOC class names)"
        raise


def _fmt(v: float | None, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.2f}"


def format_quality_table(quality: Mapping, names: Mapping[int, str]) -> str:
    """Plain-text table: per class and overall, raw vs pseudo (P, R, CorLoc in %, boxes/img)."""
    head = (
        f"{'class':<14}|{'raw P':>7}{'raw R':>7}{'raw CL':>8}{'raw b/i':>8} |"
        f"{'P':>7}{'R':>7}{'CL':>7}{'b/i':>7}"
    )
    lines = [head, "-" * len(head)]
    raw, ps = quality["raw"], quality["pseudo"]

    def row(name: str, r: Mapping, p: Mapping) -> str:
        return (
            f"{name:<14}|{_fmt(r['precision']):>7}{_fmt(r['recall']):>7}"
            f"{_fmt(r['corloc']):>8}{_fmt(r['boxes_per_image'], False):>8} |"
            f"{_fmt(p['precision']):>7}{_fmt(p['recall']):>7}{_fmt(p['corloc']):>7}"
            f"{_fmt(p['boxes_per_image'], False):>7}"
        )

    for c in sorted(set(raw["per_class"]) | set(ps["per_class"]), key=int):
        r = raw["per_class"].get(c) or raw["per_class"].get(str(c))
        p = ps["per_class"].get(c) or ps["per_class"].get(str(c))
        empty = {"precision": None, "recall": None, "corloc": None, "boxes_per_image": None}
        lines.append(row(names.get(int(c), str(c))[:14], r or empty, p or empty))
    lines.append("-" * len(head))
    lines.append(row("overall", raw["overall"], ps["overall"]))
    return "\n".join(lines)


def format_ablation_table(rows: Sequence[Mapping]) -> str:
    """Plain-text table: one row per chain (boxes/img, precision, recall, CorLoc, and the
    shares of boxes holding 2+ objects / one object plus too much, all in %)."""
    w = max(24, *(len(r["name"]) for r in rows)) if rows else 24
    head = (
        f"{'chain':<{w}} {'boxes/img':>9} {'P@0.5':>7} {'R@0.5':>7} {'CorLoc':>7}"
        f" {'2+obj':>6} {'1obj+':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"{r['name']:<{w}} {r['skipped']}")
            continue
        o = r["overall"]
        shares = (r.get("errors") or {}).get("shares") or {}
        lines.append(
            f"{r['name']:<{w}} {_fmt(o['boxes_per_image'], False):>9} "
            f"{_fmt(o['precision']):>7} {_fmt(o['recall']):>7} {_fmt(o['corloc']):>7}"
            f" {_fmt(shares.get('too big, 2+ objects')):>6}"
            f" {_fmt(shares.get('too big, 1 object')):>6}"
        )
    return "\n".join(lines)
