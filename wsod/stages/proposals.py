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
scores, see ``scoring=dict(type='image')`` in :mod:`wsod.models.roi_heads.cam_scoring`). The
pixel methods work on the image shrunk to a longer side of ``resize`` (:data:`RESIZE` px by
default; a large image is decoded reduced), so a 12 MP photo costs what a VOC image does; an
image taking half a minute or more is named in a warning. All go through
:func:`wsod.proposals.postprocess.postprocess` (clip, ``min_size``, de-duplicate,
``max_boxes``).

Invariants: every image of the split (of the shard) has an entry, possibly empty; output order
is the split order; results are deterministic for a given ``seed`` (selective search seeds
OpenCV's ranking per image), so resumed, sharded and single runs give identical files.

Scale: ``workers`` processes (OpenCV single-threaded in each; they exit when the main process
dies, and a dead worker stops the run with "rerun the same command to resume"); per-image
results are cached in ``cache_dir`` (default ``<out>.cache/``) so an interrupted run resumes;
the cache keys each image by name and content, so one folder can serve several runs (the
Makefile's shared ``PROPOSAL_CACHE``);
``shard='i/n'`` takes ``images[i::n]`` and marks the output as a shard in its meta;
``merge=[shard files]`` combines shards into one complete file.

This module only orchestrates, one function per mode: the computing loop lives in
:mod:`wsod.proposals.compute`, imports in :mod:`wsod.proposals.importers`, shards and their
merge in :mod:`wsod.proposals.sharding`, files in :mod:`wsod.proposals.store`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.contracts import load_split, resolve_data_root, validate_proposals
from wsod.proposals.compute import compute_image, compute_split, whole_image
from wsod.proposals.sharding import merge_shards, parse_shard, shard_info, take_shard
from wsod.proposals.store import load_proposals, save_proposals

__all__ = ["METHODS", "compute_image", "load_proposals", "merge_shards", "run"]

METHODS = ("selective_search", "edge_boxes", "import", "whole_image")
# The default working size of selective search and EdgeBoxes (longer side, px): the size of a
# PASCAL VOC image (at most 500 px, so VOC's boxes are those of full resolution), where fast
# selective search takes a second or two an image on one core; a 12 MP phone photo at full
# resolution takes many minutes. Boxes are mapped back to the image's full pixels.
RESIZE = 500


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
    resize: int | None = RESIZE,
    seed: int = 0,
    merge: Sequence[str | os.PathLike] | None = None,
    data_root: str | os.PathLike | None = None,
) -> dict:
    """Compute (or import, or merge) proposals for a split and write ``out`` + its twin.

    Args:
        split: weak-label split json. out: output ``.pkl`` (its ``.npz`` twin goes beside it).
        method: ``selective_search``, ``edge_boxes``, ``import`` or ``whole_image``.
        mode: selective search ``fast`` or ``quality``.
        max_boxes: boxes kept per image, best by score (<= 0 keeps all).
        min_size: drop boxes narrower or lower than this (pixels, after clipping).
        workers: processes over images (``spawn``: a script calling ``run`` with ``workers >
            1`` needs the ``if __name__ == '__main__':`` guard).
        shard: ``'i/n'`` (0-based): only ``images[i::n]``; the meta records the shard.
        cache_dir: per-image cache (default ``<out>.cache``); reruns skip cached images.
        import_file, import_layout: method ``import``: a .mat/.pkl/.npz file; its box layout,
            ``'yx1'`` (1-based y1,x1,y2,x2; .mat default) or ``'xy'`` (.pkl/.npz default).
        allow_pickle: allow reading pickle files (runs code; only for trusted files).
        edge_model: structured-edge model for EdgeBoxes (else the Sobel fallback).
        resize: working size (longer side) of the pixel methods, boxes mapped back to full
            pixels (:data:`RESIZE`); 0 or None: full resolution, whatever the image's size.
        seed: seed for selective search's ranking.
        merge: shard files to combine into ``out`` instead of computing anything.
        data_root: override the split's ``info.data_root``.

    Returns:
        A summary: ``out``, ``npz``, ``images``, ``computed``, ``cached``, ``seconds``,
        ``seconds_per_image`` (per computed image, all workers summed), ``boxes_per_image``,
        ``shard``, and ``import_report`` for imports.
    """
    started = time.time()
    split_path, out = Path(split), Path(out)
    sp = load_split(split_path)
    if out.suffix != ".pkl":
        raise ValueError(f"{out}: --out must end in .pkl (mmdet proposal_file)")
    if merge:
        return _run_merge(split_path, sp, out, list(merge), allow_pickle, seed, started)
    if method not in METHODS:
        raise ValueError(f"unknown --method {method!r}; choose one of {METHODS}")
    edge = None if edge_model is None else str(edge_model)
    params = dict(method=method, mode=mode, max_boxes=max_boxes, min_size=min_size)
    params.update(resize=int(resize) if resize else None, seed=seed, edge_model=edge)
    sh = parse_shard(shard)
    todo = take_shard(sp["images"], sh)
    summary: dict[str, Any] = {"out": str(out), "npz": str(out.with_suffix(".npz"))}
    summary.update(images=len(todo), shard=shard_info(sh, len(todo), len(sp["images"])))
    inputs: list[Path] = [split_path]
    if method == "import":
        props = _run_import(todo, params, import_file, import_layout, allow_pickle, summary)
        inputs.append(Path(import_file))
    elif method == "whole_image":
        props = whole_image(todo)
        summary.update(computed=len(props), cached=0)
    else:
        root = resolve_data_root(sp, split_path, data_root)
        cache = cache_dir if cache_dir is not None else f"{out}.cache"
        sizes = {im["file_name"]: (int(im["width"]), int(im["height"])) for im in todo}
        props, stats = compute_split(list(sizes), root, params, cache, workers, sizes)
        summary.update(stats)
    config = dict(params, workers=workers, shard=shard, import_layout=import_layout)
    config["import_file"] = None if import_file is None else str(import_file)
    _save(out, props, [im["file_name"] for im in todo], summary, config, inputs, seed, started)
    return summary


def _run_import(
    todo: list[dict],
    params: Mapping,
    import_file: str | os.PathLike | None,
    import_layout: str | None,
    allow_pickle: bool,
    summary: dict,
) -> dict:
    """Method ``import``: the user's file, post-processed like computed boxes."""
    if import_file is None:
        raise ValueError("--method import needs --import-file FILE (.mat, .pkl or .npz)")
    from wsod.proposals.importers import import_split

    props, report = import_split(
        import_file,
        todo,
        allow_pickle=allow_pickle,
        layout=import_layout,
        min_size=params["min_size"],
        max_boxes=params["max_boxes"],
    )
    summary["import_report"] = {
        k: (v if not isinstance(v, list) else len(v)) for k, v in report.items()
    }
    summary["unmatched_entries"] = report["unmatched_entries"][:20]
    summary.update(computed=len(props), cached=0)
    return props


def _run_merge(
    split_path: Path,
    sp: Mapping,
    out: Path,
    merge: list[str | os.PathLike],
    allow_pickle: bool,
    seed: int,
    started: float,
) -> dict:
    """``merge=[shard files]``: combine shards into one complete ``out``."""
    props, infos = merge_shards(
        merge, [im["file_name"] for im in sp["images"]], allow_pickle=allow_pickle
    )
    save_proposals(
        out,
        props,
        stage="proposals",
        config={"merge": [str(m) for m in merge]},
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


def _save(
    out: Path,
    props: dict,
    keys: list[str],
    summary: dict,
    config: dict,
    inputs: list[Path],
    seed: int,
    started: float,
) -> None:
    """Validate ``props`` against the split's keys, finish ``summary`` and write ``out``."""
    validate_proposals(props, where=str(out), file_names=keys)
    summary["boxes_per_image"] = _bpi(props)
    summary["seconds"] = round(time.time() - started, 3)
    extra = {k: v for k, v in summary.items() if k not in ("out", "npz")}
    save_proposals(
        out,
        props,
        stage="proposals",
        config=config,
        seed=seed,
        started=started,
        inputs=inputs,
        extra=extra,
    )


def _bpi(props: Mapping[str, Mapping[str, np.ndarray]]) -> float:
    return round(float(np.mean([len(v["bboxes"]) for v in props.values()])), 1) if props else 0.0
