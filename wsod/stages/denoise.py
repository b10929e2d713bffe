"""De-noise stage: a black box's class-specific boxes -> pseudo-strong labels.

Inputs:
    ``detections``: COCO results json (image_id, category_id, bbox xywh, score) on the training
    images, from ``wsod weak`` or any external detector; ``split``: the weak-label split json
    (image sizes and image-level labels; no boxes).
Output:
    ``out``: COCO instances json (``images`` id/file_name/width/height from the split,
    ``categories``, ``annotations`` with id, image_id, category_id, bbox xywh, area, iscrowd,
    ``score`` = the detector's score, and ``weight`` when the chain writes one) + ``.meta.json``.
    ``iscrowd`` is 0 for a pseudo box and 1 for an ignore region (``ignore_regions``; mmdet's
    ``CocoDataset`` loads them as ignored instances); counts and quality are of pseudo boxes.
    mmdet's ``CocoDataset`` trains on it directly. Images left without a box stay in ``images``
    (mmdet's ``filter_empty_gt`` drops them from training); the summary counts them.
Diagnostics (optional, never used to choose boxes):
    ``quality_gt``: a reference-box file of the same split given explicitly by the user. Then
    ``<out>.quality.json`` holds precision / recall at IoU 0.5, CorLoc and boxes per image, per
    class and overall, for the pseudo labels and for the raw output (label consistency only);
    a table is printed. ``ablate`` runs several chains on the same detections and writes
    ``<out>.ablation.json`` plus a table. The reference boxes are read by
    ``wsod.evaluation.localization`` only and touch nothing but these reports.
Invariants:
    label consistency is always the first strategy; a labelled class with detections keeps at
    least one box under every fallback strategy; nothing is invented: a labelled class with no
    detection gets no box (counted in the summary as ``pairs_without_detections``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.contracts import (
    load_detections,
    load_split,
    validate_pseudo_labels,
    xywh_to_xyxy,
    xyxy_to_xywh,
)
from wsod.denoise import (
    ABLATION_CHAINS,
    build_chain,
    denoise_arrays,
    describe_chain,
    flatten,
    parse_strategies,
)
from wsod.denoise.common import take
from wsod.utils.io import write_json_artifact

STAGE = "denoise"


def detections_to_arrays(dets: Sequence[Mapping]) -> dict[str, np.ndarray]:
    """COCO results list -> flat arrays ``image_ids`` (N,), ``bboxes`` (N,4) x1y1x2y2,
    ``scores`` (N,), ``labels`` (N,)."""
    if not dets:
        return {
            "image_ids": np.zeros(0, np.int64),
            "bboxes": np.zeros((0, 4)),
            "scores": np.zeros(0),
            "labels": np.zeros(0, np.int64),
        }
    return {
        "image_ids": np.fromiter((d["image_id"] for d in dets), np.int64, len(dets)),
        "bboxes": xywh_to_xyxy(np.array([d["bbox"] for d in dets], np.float64)),
        "scores": np.fromiter((d["score"] for d in dets), np.float64, len(dets)),
        "labels": np.fromiter((d["category_id"] for d in dets), np.int64, len(dets)),
    }


def labelled_pairs(images: Sequence[Mapping]) -> np.ndarray:
    """(K,2) int64 (image_id, category_id) for every image-level label of the split."""
    rows = [(int(im["id"]), int(c)) for im in images for c in set(im["labels"])]
    return np.array(rows, np.int64).reshape(-1, 2)


def to_coco(
    results: Mapping[int, Mapping[str, np.ndarray]], split: Mapping, info: Mapping | None = None
) -> dict:
    """Per-image pseudo boxes -> COCO instances dict (see the module docstring)."""
    images = [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in split["images"]]
    anns = []
    next_id = 1
    for im in split["images"]:
        d = results.get(int(im["id"]))
        if d is None or len(d["scores"]) == 0:
            continue
        xywh = np.round(xyxy_to_xywh(d["bboxes"]), 2)
        score = d.get("raw_scores", d["scores"])
        weights = d.get("weights")
        ignore = d.get("ignore")
        for j in range(len(xywh)):
            a = {
                "id": next_id,
                "image_id": int(im["id"]),
                "category_id": int(d["labels"][j]),
                "bbox": [float(v) for v in xywh[j]],
                "area": float(xywh[j, 2] * xywh[j, 3]),
                "iscrowd": int(ignore[j]) if ignore is not None else 0,
                "score": round(float(score[j]), 6),
            }
            if weights is not None:
                a["weight"] = round(float(weights[j]), 6)
            anns.append(a)
            next_id += 1
    return {
        "info": dict(info or {}),
        "images": images,
        "categories": list(split["categories"]),
        "annotations": anns,
    }


def _count_summary(
    results: Mapping[int, Mapping[str, np.ndarray]],
    split: Mapping,
    raw: Mapping[int, Mapping[str, np.ndarray]],
) -> dict:
    n_regions = sum(int(d["ignore"].sum()) for d in results.values() if "ignore" in d)
    results = pseudo_boxes(results)
    n_boxes = sum(len(d["scores"]) for d in results.values())
    n_img = len(split["images"])
    empty = sum(1 for d in results.values() if len(d["scores"]) == 0)
    no_det = 0
    lost = 0
    for im in split["images"]:
        have_raw = set(raw[int(im["id"])]["labels"].tolist())
        have = set(results[int(im["id"])]["labels"].tolist())
        for c in set(im["labels"]):
            no_det += c not in have_raw
            lost += c in have_raw and c not in have
    return {
        "images": n_img,
        "boxes": n_boxes,
        "boxes_per_image": n_boxes / n_img,
        "images_without_boxes": empty,
        "pairs_without_detections": no_det,
        "pairs_lost_by_chain": lost,
        "ignore_regions": n_regions,
    }


def _resolve_ablation(ablate: Any, main_chain: list[dict]) -> dict[str, list[dict]]:
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
    """Plain-text table: one row per chain (boxes/img, precision, recall, CorLoc in %)."""
    w = max(24, *(len(r["name"]) for r in rows)) if rows else 24
    head = f"{'chain':<{w}} {'boxes/img':>9} {'P@0.5':>7} {'R@0.5':>7} {'CorLoc':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        o = r["overall"]
        lines.append(
            f"{r['name']:<{w}} {_fmt(o['boxes_per_image'], False):>9} "
            f"{_fmt(o['precision']):>7} {_fmt(o['recall']):>7} {_fmt(o['corloc']):>7}"
        )
    return "\n".join(lines)


def run(
    detections: str | os.PathLike,
    split: str | os.PathLike,
    out: str | os.PathLike,
    *,
    strategies: str | os.PathLike | Sequence[Mapping] | None = None,
    quality_gt: str | os.PathLike | None = None,
    ablate: bool | Sequence | Mapping | None = None,
    min_score: float | None = None,
) -> dict:
    """De-noise detections into pseudo labels; optionally report their quality.

    Args:
        detections: COCO results json of the split's images.
        split: weak-label split json (the detections' image and category ids must exist there).
        out: pseudo-label json to write (``.meta.json`` beside it).
        strategies: strategy list (or a JSON / python-literal string, or a .py/.json file);
            None = ``wsod.denoise.DEFAULT_STRATEGIES`` (label consistency -> top-1).
        quality_gt: reference boxes of the same split, for the diagnostic quality report only.
        ablate: True (built-in chains), a list of chains or a dict name -> chain; needs
            ``quality_gt``.
        min_score: drop detections scoring below this when reading (before any strategy; no
            fallback), like mmdet's ``score_thr``.

    Returns:
        Summary dict: counts, chain, timings, and the overall quality numbers when measured.
    """
    started = time.time()
    out = Path(out)
    if ablate and quality_gt is None:
        raise ValueError(
            "--ablate needs --quality-gt (the reference boxes of the same split) "
            "to score the chains"
        )
    split_d = load_split(split)
    cats = {c["name"]: int(c["id"]) for c in split_d["categories"]}
    names = {v: k for k, v in cats.items()}
    chain_cfg = parse_strategies(strategies)
    chain = build_chain(chain_cfg, cats)
    t0 = time.time()
    dets = load_detections(detections, split_d)
    arrays = detections_to_arrays(dets)
    del dets
    if min_score is not None:
        keep = arrays["scores"] >= float(min_score)
        arrays = {k: v[keep] for k, v in arrays.items()}
    t_read = time.time() - t0
    images = split_d["images"]
    flat = (arrays["image_ids"], arrays["bboxes"], arrays["scores"], arrays["labels"], images)
    t0 = time.time()
    results = denoise_arrays(*flat, chain)
    t_chain = time.time() - t0
    raw_results = denoise_arrays(*flat, build_chain([], cats))  # label consistency only
    summary = _count_summary(results, split_d, raw_results)
    summary.update(
        detections=int(len(arrays["scores"])),
        chain=describe_chain(chain),
        seconds_read=round(t_read, 3),
        seconds_chain=round(t_chain, 3),
    )
    pseudo = to_coco(
        results,
        split_d,
        info={
            "description": "wsod pseudo labels",
            "split": split_d["info"].get("split"),
            "data_root": split_d["info"].get("data_root"),
            "chain": summary["chain"],
            "detections": str(detections),
        },
    )
    validate_pseudo_labels(pseudo, where=str(out))
    config = {
        "strategies": summary["chain"],
        "min_score": min_score,
        "quality_report": quality_gt is not None,
        "ablate": ablate,
    }
    write_json_artifact(
        out,
        pseudo,
        stage=STAGE,
        config=config,
        inputs=[detections, split],
        started=started,
        extra={"summary": summary},
    )
    print(
        f"wsod denoise: {summary['images']} images, {summary['boxes']} pseudo boxes "
        f"({summary['boxes_per_image']:.2f}/img), {summary['images_without_boxes']} images "
        f"without a box, {summary['pairs_without_detections']} labelled (image, class) pairs "
        f"without any detection"
        + (f", {summary['ignore_regions']} ignore regions" if summary["ignore_regions"] else "")
        + f" -> {out}"
    )

    if quality_gt is not None:
        from wsod.evaluation.localization import localization_quality, read_reference_boxes

        ref = read_reference_boxes(quality_gt)
        ids = np.array([im["id"] for im in images], np.int64)
        if not np.isin(ids, ref["image_set"]).all():
            missing = int((~np.isin(ids, ref["image_set"])).sum())
            raise ValueError(
                f"{quality_gt}: {missing} images of {split} are not in this "
                "reference file; pass the reference boxes of the same split"
            )
        sel = np.isin(ref["image_ids"], ids)
        ref = {k: (v[sel] if k != "image_set" else v) for k, v in ref.items()}
        pairs = labelled_pairs(images)
        raw = flatten(raw_results)
        quality = {
            "note": "diagnosis only: reference boxes were not used to choose pseudo labels",
            "iou_thr": 0.5,
            "split": str(split),
            "reference": str(quality_gt),
            "chain": summary["chain"],
            "raw": localization_quality(raw, ref, pairs, len(images)),
            "pseudo": localization_quality(_scored(results), ref, pairs, len(images)),
        }
        qpath = Path(f"{out}.quality.json")
        write_json_artifact(
            qpath,
            quality,
            indent=1,
            stage=STAGE,
            config=config,
            inputs=[detections, split, quality_gt, out],
            started=started,
        )
        print("pseudo-label quality (diagnosis only; IoU > 0.5; P/R/CorLoc in %):")
        print(format_quality_table(quality, names))
        summary["quality"] = {
            "raw": quality["raw"]["overall"],
            "pseudo": quality["pseudo"]["overall"],
            "path": str(qpath),
        }

        if ablate:
            rows = []
            for name, cfg in _resolve_ablation(ablate, chain_cfg).items():
                ch = build_chain(cfg, cats)
                t0 = time.time()
                res = denoise_arrays(*flat, ch)
                dt = time.time() - t0
                q = localization_quality(_scored(res), ref, pairs, len(images))
                rows.append(
                    {
                        "name": name,
                        "chain": describe_chain(ch),
                        "seconds": round(dt, 3),
                        "overall": q["overall"],
                        "per_class": q["per_class"],
                    }
                )
            apath = Path(f"{out}.ablation.json")
            write_json_artifact(
                apath,
                {"note": quality["note"], "iou_thr": 0.5, "rows": rows},
                indent=1,
                stage=STAGE,
                config=config,
                inputs=[detections, split, quality_gt],
                started=started,
            )
            print("de-noise ablation (diagnosis only; IoU > 0.5; P/R/CorLoc in %):")
            print(format_ablation_table(rows))
            summary["ablation"] = {
                "path": str(apath),
                "rows": [{"name": r["name"], **r["overall"]} for r in rows],
            }
    return summary


def pseudo_boxes(
    results: Mapping[int, Mapping[str, np.ndarray]],
) -> dict[int, dict[str, np.ndarray]]:
    """The pseudo boxes of each image, without ignore regions."""
    return {i: take(d, d["ignore"] == 0) if "ignore" in d else dict(d) for i, d in results.items()}


def _scored(results: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Flat arrays for the metrics (pseudo boxes only), ranking by the detector's score
    (``raw_scores`` if kept)."""
    flat = flatten(pseudo_boxes(results))
    if "raw_scores" in flat:
        flat["scores"] = flat["raw_scores"]
    return flat
