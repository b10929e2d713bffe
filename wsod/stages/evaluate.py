"""Stage ``evaluate``: score detectors (and pseudo labels) against the eval-only ground truth.

Inputs:
    - ``gt``: the eval split's ``<split>_gt.json`` (COCO instances + ``difficult``);
    - ``detections``: ``{name: COCO results json}`` on that split (e.g. ``weak``, ``strong``,
      ``fsd``), all scored on the same images;
    - optional train-side diagnostics: ``train_gt`` (the train split's gt file), with
      ``train_detections`` (CorLoc of each) and ``pseudo_labels`` (precision/recall, CorLoc and
      VOC AP of the pseudo boxes, scored by the same code as detectors);
    - optional ``label_splits``: the weak-label splits (image-level tags), for the ``tags``
      entry (:mod:`wsod.evaluation.tags_only`): images per class, how often each detector fires
      on the images tagged with a class and on the others, weak/strong agreement.

Box coverage, read from the gt files' ``info`` (the data stage writes it): tags-only data
(``has_boxes`` false) gets no AP entries (``detectors`` is empty) and no ``train`` entry, and
``skipped`` says, one line each, what was left out and why; with boxes for some images only
(``boxed_images``, from ``wsod data --boxes``), every box metric is over those images and the
first caveat says so.

Output: ``metrics.json`` (atomic, with ``metrics.json.meta.json``): per detector VOC mAP at IoU 0.5
in both 11-point (VOC07) and area (VOC10+) modes, COCO AP 0.50:0.95, per-class AP and a PR curve
per class downsampled to ``pr_points`` recall levels (so the report needs only this file), plus
the split name, the data caveats (:mod:`wsod.evaluation.caveats`) and ``strong/weak`` ratios,
validated by :func:`wsod.contracts.validate_metrics` before it is written.

Invariants: this stage and :mod:`wsod.evaluation.gt` are the only readers of ground-truth boxes;
it runs after training and feeds nothing back into it. ``metrics.json`` says so in ``gt_note``.
The scoring itself is :mod:`wsod.evaluation.scoring`; this module reads, orchestrates, writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod.contracts import (
    load_detections,
    load_pseudo_labels,
    load_split,
    ordered_detectors,
    pseudo_label_detections,
    validate_detections,
    validate_metrics,
)
from wsod.evaluation.caveats import caveats_for
from wsod.evaluation.gt import class_ids, class_names, load_gt
from wsod.evaluation.scoring import (
    localization_entry,
    pseudo_label_entry,
    ratios,
    score_detections,
)
from wsod.evaluation.tags_only import (
    NONE,
    SUBSET,
    agreement,
    box_coverage,
    firing,
    images_per_class,
    restrict,
    restrict_detections,
    tag_hits,
)
from wsod.utils.io import named_paths, write_json_artifact

GT_NOTE = (
    "Only evaluation reads ground-truth boxes (the eval-only <split>_gt.json files); the "
    "training stages (proposals, weak, denoise, strong) saw image-level labels only. "
    "Train-side figures (CorLoc, pseudo-label quality) are diagnostics computed here, "
    "after training."
)


def _split_name(gt: Mapping, path: Path) -> str:
    return (gt.get("info") or {}).get("split") or path.stem.removesuffix("_gt")


def _header(gt: Mapping, gt_path: Path, split: str, iou_thr: float) -> dict[str, Any]:
    """What ``metrics.json`` says about the evaluated split, before any detector."""
    return {
        "split": split,
        "gt": str(gt_path),
        "iou_thr": iou_thr,
        "num_images": len(gt["images"]),
        "num_gt_boxes": len(gt["annotations"]),
        "classes": [class_names(gt)[c] for c in class_ids(gt)],
        "caveats": caveats_for(gt),
        "gt_note": GT_NOTE,
    }


def _score_detectors(
    gt: Mapping, files: Mapping[str, Path], scored: tuple[Mapping, list[int] | None] | None, opts
) -> tuple[dict[str, dict], dict[str, dict]]:
    """Each detector read once: ``({name: {"file", **score_detections}}`` on ``scored`` = (the
    gt to score on, the image ids it keeps), none when None; ``{name: where it fires}`` (for
    ``tags``) when ``opts["score_thr"]`` is set), weak first."""
    out, fires = {}, {}
    for name in ordered_detectors(files):
        dets = load_detections(files[name], gt)
        if scored is not None:
            sgt, keep = scored
            out[name] = {"file": str(files[name])}
            kw = {"iou_thr": opts["iou_thr"], "pr_points": opts["pr_points"]}
            out[name].update(score_detections(sgt, restrict_detections(dets, keep), **kw))
        if opts.get("score_thr") is not None:
            fires[name] = firing(dets, opts["score_thr"])
    return out, fires


def _train_diagnostics(
    train_gt: Path,
    tdet_paths: Mapping[str, Path],
    pseudo_labels: Path | None,
    iou_thr: float,
    pr_points: int,
    skipped: list[str],
) -> dict[str, Any] | None:
    """The ``train`` entry: CorLoc of each train-side detector, pseudo-label quality, over the
    train images that have boxes; None (and a line in ``skipped``) when none has."""
    full = load_gt(train_gt)
    cover = box_coverage(full)
    if cover["coverage"] == NONE:
        skipped.append(
            f"Skipped CorLoc and pseudo-label precision on train, and no fully supervised "
            f"reference (fsd) can be trained: {train_gt} has no boxes (tags-only data); "
            "`wsod data --boxes FILE` gives them for the images it covers."
        )
        return None
    keep = cover["boxed_images"]
    tgt = restrict(full, keep)
    train: dict[str, Any] = {
        "gt": str(train_gt),
        "split": _split_name(tgt, train_gt),
        "num_images": len(tgt["images"]),
        "detectors": {},
    }
    for name, path in tdet_paths.items():
        dets = restrict_detections(load_detections(path, full), keep)
        entry = {"file": str(path), "num_detections": len(dets)}
        entry.update(localization_entry(dets, tgt, iou_thr))
        train["detectors"][name] = entry
    if pseudo_labels is not None:
        pl = load_pseudo_labels(pseudo_labels)
        validate_detections(pseudo_label_detections(pl), full, where=str(pseudo_labels))
        train["pseudo_labels"] = {
            "file": str(pseudo_labels),
            **pseudo_label_entry(restrict(pl, keep), tgt, iou_thr=iou_thr, pr_points=pr_points),
        }
    return train


def _add_train_diagnostics(
    result: dict, train: tuple, iou_thr: float, pr_points: int, skipped: list[str]
) -> list[Path]:
    """``result["train"]`` (:func:`_train_diagnostics`, unless no train image has boxes) for
    ``train = (train gt, {name: train detections}, pseudo labels or None)``; returns the files
    it read."""
    train_gt, tdet_paths, pseudo_labels = train
    pl_path = None if pseudo_labels is None else Path(pseudo_labels)
    entry = _train_diagnostics(train_gt, tdet_paths, pl_path, iou_thr, pr_points, skipped)
    if entry is not None:
        result["train"] = entry
    return [train_gt, *tdet_paths.values(), *([pl_path] if pl_path else [])]


def _box_scores(
    gt: Mapping, gt_path: Path, result: dict, skipped: list
) -> tuple[Mapping, list[int] | None] | None:
    """``(gt to score on, image ids it keeps or None for all)``: all of the gt, or its boxed
    subset (a caveat says so); None on tags-only data (a line in ``skipped`` says so)."""
    cover = box_coverage(gt)
    result["boxes"] = {k: v for k, v in cover.items() if k != "boxed_images"}
    if cover["coverage"] == NONE:
        skipped.append(
            f"Skipped mAP, AP and COCO AP of every detector on {result['split']}: {gt_path} has "
            "no boxes (tags-only data: info.has_boxes is false); `wsod data --boxes FILE` gives "
            "them for the images it covers."
        )
        return None
    if cover["coverage"] == SUBSET:
        result["caveats"].insert(
            0,
            f"Boxes were given (wsod data --boxes) for {cover['num_boxed_images']} of the "
            f"{cover['num_images']} {result['split']} images: every AP, CorLoc and pseudo-label "
            "figure is over those images only.",
        )
        gt = restrict(gt, cover["boxed_images"])
        result.update(num_images=len(gt["images"]), num_gt_boxes=len(gt["annotations"]))
    return gt, cover["boxed_images"]


def _tag_figures(
    loaded: Mapping[str, dict],
    paths: Mapping[str, Path],
    split: str,
    fires: Mapping[str, dict],
    files: Mapping[str, Path],
    score_thr: float,
) -> dict[str, Any]:
    """The ``tags`` entry, judged against image-level tags only: tagged images per class of
    each label split; on the evaluated split's, how often each detector fires on tagged and on
    untagged images, and the agreement of weak and strong (:mod:`wsod.evaluation.tags_only`)."""
    out: dict[str, Any] = {
        "splits": {n: str(p) for n, p in paths.items()},
        "images_per_class": {n: images_per_class(s) for n, s in loaded.items()},
        "score_thr": score_thr,
    }
    ev = loaded.get(split)
    if ev is not None:
        out["detectors"] = {n: {"file": str(files[n]), **tag_hits(ev, f)} for n, f in fires.items()}
        if "weak" in fires and "strong" in fires:
            out["agreement"] = {"weak/strong": agreement(ev, fires["weak"], fires["strong"])}
    return out


def run(
    gt: str | os.PathLike,
    detections: Mapping[str, Any] | Sequence[str] | str,
    out: str | os.PathLike,
    *,
    names: Sequence[str] | None = None,
    train_gt: str | os.PathLike | None = None,
    train_detections: Mapping[str, Any] | Sequence[str] | str | None = None,
    pseudo_labels: str | os.PathLike | None = None,
    split_name: str | None = None,
    iou_thr: float = 0.5,
    pr_points: int = 101,
    label_splits: Mapping[str, Any] | Sequence[str] | str | None = None,
    score_thr: float = 0.3,
) -> dict[str, Any]:
    """Evaluate detectors on an eval split and write ``metrics.json``.

    Args:
        gt: eval split ground truth ``<split>_gt.json``.
        detections: ``{name: results json}`` (or ``"name=path"`` strings / bare paths).
        out: output ``metrics.json`` path.
        names: names for bare detection paths, in order.
        train_gt: train split ground truth, for the train-side diagnostics.
        train_detections: ``{name: results json on the train split}``: CorLoc of each.
        pseudo_labels: pseudo-label json (COCO instances + score) on train images: precision,
            recall, CorLoc and VOC AP against ``train_gt``.
        split_name: name of the evaluated split (default: ``info.split`` of the gt file, else
            the file stem without ``_gt``).
        iou_thr: IoU threshold of VOC AP, CorLoc and pseudo-label precision/recall.
        pr_points: recall levels kept per PR curve.
        label_splits: ``{name: weak-label split json}`` (``train``, ``val``): images per class,
            and on the evaluated split's tags how often each detector fires and how weak and
            strong agree (the ``tags`` entry; what tags-only data can be judged by).
        score_thr: the score from which a detection counts as firing, for ``tags``.

    Box metrics need boxes: on tags-only data (``info.has_boxes`` false) there are no AP,
    CorLoc or pseudo-label entries, and ``skipped`` says why; with boxes for some images only
    (``info.boxed_images``), every box metric is over those images and a caveat says so.

    Returns:
        The metrics dict written to ``out`` (:func:`wsod.contracts.validate_metrics`).
    """
    started = time.time()
    gt_path = Path(gt)
    gt_data = load_gt(gt_path)
    det_paths = named_paths(detections, names)
    if not det_paths:
        raise ValueError("no detections given; pass --detections name=PATH (e.g. weak=...)")
    tdet_paths, splits = named_paths(train_detections), named_paths(label_splits)
    if (tdet_paths or pseudo_labels) and train_gt is None:
        raise ValueError("train-side diagnostics need --train-gt (the train split's _gt.json)")
    split = split_name or _split_name(gt_data, gt_path)
    result = _header(gt_data, gt_path, split, iou_thr)
    skipped: list[str] = []
    scored = _box_scores(gt_data, gt_path, result, skipped)
    loaded = {n: load_split(p) for n, p in splits.items()}
    opts = {"iou_thr": iou_thr, "pr_points": pr_points}
    opts["score_thr"] = score_thr if split in loaded else None  # tags of the evaluated split
    result["detectors"], fires = _score_detectors(gt_data, det_paths, scored, opts)
    vs_weak = ratios(result["detectors"])
    if vs_weak is not None:
        result["ratios"] = vs_weak
    inputs = [gt_path, *det_paths.values(), *splits.values()]
    if train_gt is not None:
        train = (Path(train_gt), tdet_paths, pseudo_labels)
        inputs += _add_train_diagnostics(result, train, iou_thr, pr_points, skipped)
    if splits:
        result["tags"] = _tag_figures(loaded, splits, split, fires, det_paths, score_thr)
    result["skipped"] = skipped
    validate_metrics(result, where=str(out))
    config = dict(gt=gt_path, detections=det_paths, train_gt=train_gt)
    config.update(train_detections=tdet_paths, pseudo_labels=pseudo_labels, split_name=split)
    config.update(iou_thr=iou_thr, pr_points=pr_points, label_splits=splits, score_thr=score_thr)
    kw = {"indent": 1, "stage": "evaluate", "inputs": inputs, "started": started}
    write_json_artifact(out, result, config=config, **kw)
    return result
