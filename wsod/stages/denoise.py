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
    ``<out>.ablation.json`` plus a table. The reference boxes are read only on this
    diagnostic path (:func:`_diagnose`, through the labelled diagnostic module
    ``wsod.denoise.diagnostics``) and touch nothing but these reports.
Invariants:
    label consistency is always the first strategy; a labelled class with detections keeps at
    least one box under every fallback strategy; nothing is invented: a labelled class with no
    detection gets no box (counted in the summary as ``pairs_without_detections``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wsod.contracts import (
    detections_to_arrays,
    load_detections,
    load_split,
    validate_pseudo_labels,
)
from wsod.denoise import build_chain, denoise_arrays, describe_chain, parse_strategies
from wsod.denoise.labels import count_summary, to_coco
from wsod.utils.io import write_json_artifact

STAGE = "denoise"


@dataclass
class Denoised:
    """What one de-noise pass produced (all per-image dicts cover every image of the split)."""

    arrays: dict  # flat detections read (image_ids, bboxes, scores, labels), min_score applied
    results: dict  # {image_id: detection set} after the chain
    raw: dict  # {image_id: detection set} after label consistency only
    chain_cfg: list[dict]
    chain: list[dict]  # describe_chain of the built chain (what the summary records)
    seconds_read: float
    seconds_chain: float


def _categories(split: Mapping) -> dict[str, int]:
    """Category name -> id of a split."""
    return {c["name"]: int(c["id"]) for c in split["categories"]}


def _denoise(
    detections: str | os.PathLike, split: Mapping, chain_cfg: list[dict], min_score: float | None
) -> Denoised:
    """Read the detections (below ``min_score`` dropped) and run the chain and the raw chain."""
    cats = _categories(split)
    chain = build_chain(chain_cfg, cats)
    t0 = time.time()
    arrays = detections_to_arrays(load_detections(detections, split))
    if min_score is not None:
        keep = arrays["scores"] >= float(min_score)
        arrays = {k: v[keep] for k, v in arrays.items()}
    t_read = time.time() - t0
    flat = (arrays["image_ids"], arrays["bboxes"], arrays["scores"], arrays["labels"])
    t0 = time.time()
    results = denoise_arrays(*flat, split["images"], chain)
    t_chain = time.time() - t0
    raw = denoise_arrays(*flat, split["images"], build_chain([], cats))  # label consistency
    return Denoised(
        arrays, results, raw, chain_cfg, describe_chain(chain), round(t_read, 3), round(t_chain, 3)
    )


def _print_summary(summary: Mapping, out: Path) -> None:
    print(
        f"wsod denoise: {summary['images']} images, {summary['boxes']} pseudo boxes "
        f"({summary['boxes_per_image']:.2f}/img), {summary['images_without_boxes']} images "
        f"without a box, {summary['pairs_without_detections']} labelled (image, class) pairs "
        f"without any detection"
        + (f", {summary['ignore_regions']} ignore regions" if summary["ignore_regions"] else "")
        + f" -> {out}"
    )


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
    chain_cfg = parse_strategies(strategies)
    d = _denoise(detections, split_d, chain_cfg, min_score)
    summary = count_summary(d.results, split_d, d.raw)
    summary.update(
        detections=int(len(d.arrays["scores"])),
        chain=d.chain,
        seconds_read=d.seconds_read,
        seconds_chain=d.seconds_chain,
    )
    info = {
        "description": "wsod pseudo labels",
        "split": split_d["info"].get("split"),
        "data_root": split_d["info"].get("data_root"),
        "split_file": str(split),  # the image-level labels (a semi-supervised strong config)
        "chain": summary["chain"],
        "detections": str(detections),
    }
    pseudo = validate_pseudo_labels(to_coco(d.results, split_d, info=info), where=str(out))
    config = {
        "strategies": summary["chain"],
        "min_score": min_score,
        "quality_report": quality_gt is not None,
        "ablate": ablate,
    }
    meta = {"stage": STAGE, "config": config, "started": started}
    write_json_artifact(out, pseudo, inputs=[detections, split], extra={"summary": summary}, **meta)
    _print_summary(summary, out)
    if quality_gt is not None:
        inputs = [detections, split, quality_gt]
        summary.update(_diagnose(d, split_d, split, quality_gt, ablate, out, meta, inputs))
    return summary


def _diagnose(
    d: Denoised,
    split_d: Mapping,
    split: str | os.PathLike,
    quality_gt: str | os.PathLike,
    ablate: Any,
    out: Path,
    meta: Mapping,
    inputs: list,
) -> dict[str, Any]:
    """The diagnostic path (``--quality-gt``, ``--ablate``), the only place the stage reaches
    reference boxes, through the labelled diagnostic module :mod:`wsod.denoise.diagnostics`.

    Writes ``<out>.quality.json`` (and ``<out>.ablation.json``), prints their tables and
    returns the summary entries ``quality`` (and ``ablation``).
    """
    from wsod.denoise import diagnostics as diag

    images = split_d["images"]
    ref = diag.reference_boxes(quality_gt, images, split)
    quality = {
        "note": diag.NOTE,
        "iou_thr": diag.IOU_THR,
        "split": str(split),
        "reference": str(quality_gt),
        "chain": d.chain,
        **diag.quality(d.results, d.raw, images, ref),
    }
    qpath = Path(f"{out}.quality.json")
    write_json_artifact(qpath, quality, indent=1, inputs=[*inputs, out], **meta)
    print("pseudo-label quality (diagnosis only; IoU > 0.5; P/R/CorLoc in %):")
    names = {v: k for k, v in _categories(split_d).items()}
    print(diag.format_quality_table(quality, names))
    overall = {k: quality[k]["overall"] for k in ("raw", "pseudo")}
    found: dict[str, Any] = {"quality": {**overall, "path": str(qpath)}}
    if ablate:
        chains = diag.resolve_ablation(ablate, d.chain_cfg)
        rows = diag.ablation(chains, d.arrays, images, _categories(split_d), ref)
        apath = Path(f"{out}.ablation.json")
        report = {"note": diag.NOTE, "iou_thr": diag.IOU_THR, "rows": rows}
        write_json_artifact(apath, report, indent=1, inputs=inputs, **meta)
        print("de-noise ablation (diagnosis only; IoU > 0.5; P/R/CorLoc in %):")
        print(diag.format_ablation_table(rows))
        rows_overall = [{"name": r["name"], **r["overall"]} for r in rows]
        found["ablation"] = {"path": str(apath), "rows": rows_overall}
    return found
