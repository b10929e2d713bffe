"""Proposals stage: region proposals for every image of a weak-label split.

Inputs:
    ``split``: a weak-label split json (:func:`wsod.contracts.load_split`): ``images`` with
    ``id``, ``file_name`` (relative to ``info.data_root``), ``width``, ``height``. No boxes are
    read: proposals use pixels only (weak supervision), imports use a user's file.

Outputs (atomic, each with ``<file>.meta.json``):
    ``out`` (``.pkl``): mmdet's proposal contract ``{file_name: {"bboxes": float32 (N,4)
    x1y1x2y2 0-based, "scores": float32 (N,)}}`` keyed by the split's ``file_name``
    (``JPEGImages/000005.jpg``: the key mmdet 3.3's ``BaseDetDataset.load_proposals`` derives
    from ``img_path``, i.e. last folder + file name), boxes sorted by score descending; and its
    safe twin ``<out without .pkl>.npz`` (see :mod:`wsod.proposals.store`).

Methods: ``selective_search`` (OpenCV, ``mode`` fast|quality, rank scores), ``edge_boxes``
(OpenCV; structured edges with ``edge_model``, else a weaker Sobel edge map), ``import`` (a
.mat/.pkl/.npz file, see :mod:`wsod.proposals.importers`), ``whole_image`` (one box = the
image, from the split's sizes without reading a pixel: for a CAM black box's image-level class
scores, see ``score_mode='image'`` in :mod:`wsod.models.roi_heads.cam_head`). All go through
:func:`wsod.proposals.postprocess.postprocess` (clip, ``min_size``, de-duplicate,
``max_boxes``).

Invariants: every image of the split (of the shard) has an entry, possibly empty; output order
is the split order; results are deterministic for a given ``seed`` (selective search seeds
OpenCV's ranking per image), so resumed, sharded and single runs give identical files.

Scale: ``workers`` processes (OpenCV single-threaded in each); per-image results are cached in
``cache_dir`` (default ``<out>.cache/``) so an interrupted run resumes; ``shard='i/n'`` takes
``images[i::n]`` and marks the output as a shard in its meta; ``merge=[shard files]`` combines
shards into one complete file.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from wsod.contracts import load_split, resolve_data_root, validate_proposals
from wsod.proposals.postprocess import postprocess
from wsod.proposals.sharding import parse_shard, take_shard
from wsod.proposals.store import ProposalCache, load_proposals, save_proposals
from wsod.utils import cpu_share

__all__ = ["METHODS", "compute_image", "load_proposals", "merge_shards", "run"]

METHODS = ("selective_search", "edge_boxes", "import", "whole_image")


def compute_image(
    path: str | os.PathLike,
    key: str,
    params: Mapping[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """Proposals of one image, post-processed.

    Args:
        path: the image file.
        key: the image's split ``file_name`` (seeds selective search's ranking).
        params: ``method``, ``mode``, ``max_boxes``, ``min_size``, ``edge_model``, ``resize``,
            ``seed`` (as for :func:`run`).

    Returns:
        ``(bboxes (N,4) float32 x1y1x2y2, scores (N,) float32)``, scores descending.
    """
    from wsod.proposals.image import read_image

    img = read_image(path)
    h, w = img.shape[:2]
    if params["method"] == "selective_search":
        from wsod.proposals.selective_search import image_seed, selective_search

        boxes, scores = selective_search(
            img, params["mode"], params["resize"], seed=image_seed(params["seed"], key)
        )
    elif params["method"] == "edge_boxes":
        from wsod.proposals.edge_boxes import edge_boxes

        cap = params["max_boxes"] if params["max_boxes"] and params["max_boxes"] > 0 else 10000
        boxes, scores = edge_boxes(
            img, params["edge_model"], params["resize"], max_boxes=int(cap * 1.25) + 10
        )
    else:
        raise ValueError(f"unknown proposal method {params['method']!r}; choose {METHODS}")
    return postprocess(
        boxes, scores, w, h, min_size=params["min_size"], max_boxes=params["max_boxes"]
    )


# --------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}


def _init_worker(params: Mapping, cache_root: str) -> None:
    import cv2

    cv2.setNumThreads(1)  # one process per core; OpenCV's own threads would oversubscribe
    _WORKER["params"] = dict(params)
    _WORKER["cache"] = ProposalCache(cache_root, params)


def _work(task: tuple[str, str]) -> tuple[str, int, float]:
    key, path = task
    t0 = time.time()
    try:
        boxes, scores = compute_image(path, key, _WORKER["params"])
    except Exception as e:
        raise RuntimeError(f"{path}: proposals failed: {e}") from e
    _WORKER["cache"].put(key, boxes, scores)
    return key, len(boxes), time.time() - t0


def _compute_all(
    tasks: list[tuple[str, str]], params: Mapping, cache: ProposalCache, workers: int
) -> float:
    """Compute and cache ``tasks``; return the summed per-image compute seconds."""
    total = 0.0
    bar = tqdm(
        total=len(tasks), desc=f"proposals ({params['method']})", unit="img", dynamic_ncols=True
    )
    if workers <= 1:
        _init_worker(params, str(cache.dir.parent))
        try:
            for t in tasks:
                total += _work(t)[2]
                bar.update(1)
        finally:
            bar.close()
        return total
    ex = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),
        initializer=_init_worker,
        initargs=(dict(params), str(cache.dir.parent)),
    )
    try:
        pending = {ex.submit(_work, t) for t in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION, timeout=5)
            for f in done:
                total += f.result()[2]  # re-raises a worker's error (naming the image)
                bar.update(1)
    finally:
        bar.close()
        ex.shutdown(wait=True, cancel_futures=True)
    return total


# --------------------------------------------------------------------------- merge
def _read_meta(path: Path) -> dict:
    m = Path(f"{path}.meta.json")
    if not m.is_file():
        return {}
    with open(m) as f:
        return json.load(f)


def merge_shards(
    files: Sequence[str | os.PathLike], file_names: Sequence[str], allow_pickle: bool = False
) -> tuple[dict, list[dict]]:
    """Combine shard outputs into one proposal dict in ``file_names`` order.

    Every image of ``file_names`` must be in exactly one shard (an image in two shards must have
    identical boxes); shard markers in the metas must agree on ``n`` and not repeat an ``i``.

    Returns:
        ``(proposals, shard_infos)``.
    """
    merged: dict[str, dict[str, np.ndarray]] = {}
    infos, seen_idx, counts = [], set(), set()
    for f in files:
        props = load_proposals(f, allow_pickle=allow_pickle)
        shard = _read_meta(Path(f)).get("shard")
        infos.append({"file": str(f), "images": len(props), "shard": shard})
        if shard:
            counts.add(shard["count"])
            if shard["index"] in seen_idx:
                raise ValueError(f"{f}: shard {shard['index']}/{shard['count']} given twice")
            seen_idx.add(shard["index"])
        for k, v in props.items():
            if k in merged and not (np.array_equal(merged[k]["bboxes"], v["bboxes"])):
                raise ValueError(
                    f"{f}: image {k} is also in another shard with other boxes; "
                    "were the shards made with the same settings?"
                )
            merged[k] = v
    if len(counts) > 1:
        raise ValueError(f"shards come from different splits into n parts: {sorted(counts)}")
    missing = [k for k in file_names if k not in merged]
    if missing:
        have = sorted(seen_idx)
        raise ValueError(
            f"merge: {len(missing)} images of the split are in no shard file (e.g. "
            f"{missing[:3]}); shard indices present: {have}. Add the missing shards"
        )
    extra = [k for k in merged if k not in set(file_names)]
    if extra:
        raise ValueError(
            f"merge: {len(extra)} images are not in the split (e.g. {extra[:3]}); "
            "use the split the shards were made from"
        )
    return {k: merged[k] for k in file_names}, infos


# --------------------------------------------------------------------------- run
def run(
    split: str | os.PathLike,
    out: str | os.PathLike,
    *,
    method: str = "selective_search",
    mode: str = "fast",
    max_boxes: int = 2000,
    min_size: float = 8,
    workers: int = 1,
    shard: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    import_file: str | os.PathLike | None = None,
    import_layout: str | None = None,
    allow_pickle: bool = False,
    edge_model: str | os.PathLike | None = None,
    resize: int | None = None,
    seed: int = 0,
    merge: Sequence[str | os.PathLike] | None = None,
    data_root: str | os.PathLike | None = None,
) -> dict:
    """Compute (or import, or merge) proposals for a split and write ``out`` + its twin.

    Args:
        split: weak-label split json.
        out: output ``.pkl`` (mmdet ``proposal_file``); the ``.npz`` twin goes beside it.
        method: ``selective_search``, ``edge_boxes``, ``import`` or ``whole_image``.
        mode: selective search ``fast`` or ``quality``.
        max_boxes: keep at most this many boxes per image (best by score); <= 0 keeps all.
        min_size: drop boxes narrower or lower than this (pixels, after clipping).
        workers: processes over images (``spawn`` start method: a script that calls
            ``run`` with ``workers > 1`` needs the ``if __name__ == '__main__':`` guard).
        shard: ``'i/n'`` (0-based): process ``images[i::n]`` only; the output holds only them
            and its meta records the shard.
        cache_dir: per-image cache (default ``<out>.cache``); reruns skip cached images.
        import_file: the file to import (method ``import``): .mat, .pkl or .npz.
        import_layout: box layout of the import: ``'yx1'`` (1-based y1,x1,y2,x2; default for
            .mat) or ``'xy'`` (x1,y1,x2,y2; default for .pkl/.npz).
        allow_pickle: allow reading pickle files (runs code; only for trusted files).
        edge_model: structured-edge model file for EdgeBoxes (else the Sobel fallback).
        resize: run detectors on images shrunk to this longer side (boxes mapped back).
        seed: seed for selective search's ranking.
        merge: shard files to combine into ``out`` instead of computing anything.
        data_root: override the split's ``info.data_root``.

    Returns:
        A summary dict: ``out``, ``npz``, ``images``, ``computed``, ``cached``,
        ``seconds``, ``seconds_per_image`` (compute time per computed image, all workers
        summed), ``boxes_per_image``, ``shard``, and ``import_report`` for imports.
    """
    started = time.time()
    split_path = Path(split)
    sp = load_split(split_path)
    out = Path(out)
    if out.suffix != ".pkl":
        raise ValueError(f"{out}: --out must end in .pkl (mmdet proposal_file)")
    images = sp["images"]
    config = {
        "method": method,
        "mode": mode,
        "max_boxes": max_boxes,
        "min_size": min_size,
        "workers": workers,
        "shard": shard,
        "resize": resize,
        "seed": seed,
        "edge_model": None if edge_model is None else str(edge_model),
        "import_file": None if import_file is None else str(import_file),
        "import_layout": import_layout,
    }
    meta = {"stage": "proposals", "config": config, "seed": seed, "started": started}

    if merge:
        props, infos = merge_shards(
            list(merge), [im["file_name"] for im in images], allow_pickle=allow_pickle
        )
        config = {"merge": [str(m) for m in merge]}
        save_proposals(
            out,
            props,
            stage="proposals",
            config=config,
            seed=seed,
            inputs=[split_path, *merge],
            started=started,
            extra={"merged_from": infos, "boxes_per_image": _bpi(props)},
        )
        return {
            "out": str(out),
            "npz": str(out.with_suffix(".npz")),
            "images": len(props),
            "merged": len(infos),
            "boxes_per_image": _bpi(props),
            "seconds": round(time.time() - started, 3),
        }

    if method not in METHODS:
        raise ValueError(f"unknown --method {method!r}; choose one of {METHODS}")
    sh = parse_shard(shard)
    todo = take_shard(images, sh)
    shard_info = (
        None
        if sh is None
        else {
            "index": sh[0],
            "count": sh[1],
            "images": len(todo),
            "split_images": len(images),
            "rule": "images[i::n]",
        }
    )
    keys = [im["file_name"] for im in todo]
    summary: dict[str, Any] = {
        "out": str(out),
        "npz": str(out.with_suffix(".npz")),
        "images": len(todo),
        "shard": shard_info,
    }

    if method == "import":
        if import_file is None:
            raise ValueError("--method import needs --import-file FILE (.mat, .pkl or .npz)")
        from wsod.proposals.importers import import_proposals

        raw, report = import_proposals(
            import_file, todo, allow_pickle=allow_pickle, layout=import_layout
        )
        if report["missing_images"]:
            raise ValueError(
                f"{import_file}: {len(report['missing_images'])} of {len(todo)} split images "
                f"have no proposals there (e.g. {report['missing_images'][:3]}); "
                f"{len(report['unmatched_entries'])} file entries matched no image (e.g. "
                f"{report['unmatched_entries'][:3]}). Use the split the file was made for"
            )
        props = {}
        for im in todo:
            b, s = raw[im["file_name"]]
            bb, ss = postprocess(
                b, s, im["width"], im["height"], min_size=min_size, max_boxes=max_boxes
            )
            props[im["file_name"]] = {"bboxes": bb, "scores": ss}
        summary["import_report"] = {
            k: (v if not isinstance(v, list) else len(v)) for k, v in report.items()
        }
        summary["unmatched_entries"] = report["unmatched_entries"][:20]
        summary.update(computed=len(props), cached=0)
        inputs = [split_path, Path(import_file)]
    elif method == "whole_image":
        props = {
            im["file_name"]: {
                "bboxes": np.array([[0, 0, im["width"], im["height"]]], np.float32),
                "scores": np.ones(1, np.float32),
            }
            for im in todo
        }
        summary.update(computed=len(props), cached=0)
        inputs = [split_path]
    else:
        root = resolve_data_root(sp, split_path, data_root)
        params = {
            "method": method,
            "mode": mode,
            "max_boxes": max_boxes,
            "min_size": min_size,
            "resize": resize,
            "seed": seed,
            "edge_model": None if edge_model is None else str(edge_model),
        }
        cache = ProposalCache(cache_dir if cache_dir is not None else f"{out}.cache", params)
        cache.prepare()
        tasks = [(k, str(root / k)) for k in keys if not cache.has(k)]
        with cpu_share.slot():  # PyTorch stages run at once (make -j2) leave it the cores
            secs = _compute_all(tasks, params, cache, max(1, int(workers))) if tasks else 0.0
        props = {k: cache.get(k) for k in keys}
        summary.update(
            computed=len(tasks),
            cached=len(keys) - len(tasks),
            seconds_per_image=round(secs / len(tasks), 4) if tasks else None,
            cache_dir=str(cache.dir),
        )
        inputs = [split_path]

    validate_proposals(props, where=str(out), file_names=keys)
    summary["boxes_per_image"] = _bpi(props)
    summary["seconds"] = round(time.time() - started, 3)
    extra = {k: v for k, v in summary.items() if k not in ("out", "npz")}
    save_proposals(out, props, **meta, inputs=inputs, extra=extra)
    return summary


def _bpi(props: Mapping[str, Mapping[str, np.ndarray]]) -> float:
    return round(float(np.mean([len(v["bboxes"]) for v in props.values()])), 1) if props else 0.0
