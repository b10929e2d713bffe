"""Computing proposals for many images: one image, the worker processes, the resume cache.

:func:`compute_split` is what ``wsod proposals`` runs for the pixel methods (selective search,
EdgeBoxes): it skips images already in the per-image cache (:class:`~wsod.proposals.store.
ProposalCache`), computes the others in ``workers`` processes, and reads every image's result
back from the cache, in the split's order.

Processes: ``spawn`` workers from :class:`concurrent.futures.ProcessPoolExecutor`, OpenCV
single-threaded in each. A worker never outlives the stage: on Linux the kernel sends it
SIGTERM when the main process dies (``prctl(PR_SET_PDEATHSIG)``), elsewhere a watchdog thread
notices the new parent id; with the workers gone, multiprocessing's resource tracker exits too.
A worker that dies (killed, out of memory) stops the stage with :class:`WorkerDiedError`, whose
message says that rerunning the same command resumes from the cache.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np

from wsod.proposals.postprocess import postprocess
from wsod.proposals.store import ProposalCache, image_digest

PIXEL_METHODS = ("selective_search", "edge_boxes")


class WorkerDiedError(RuntimeError):
    """A proposal worker process died; the cached images are kept for a rerun."""


def compute_image(
    path: str | os.PathLike,
    key: str,
    params: Mapping[str, Any],
    size: tuple[int, int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Proposals of one image, post-processed.

    Args:
        path: the image file.
        key: the image's split ``file_name`` (seeds selective search's ranking).
        params: ``method``, ``mode``, ``max_boxes``, ``min_size``, ``edge_model``, ``resize``,
            ``seed`` (as for :func:`wsod.stages.proposals.run`).
        size: the image's ``(width, height)`` as the split records it: the pixels are checked
            against it, and a large image is decoded reduced towards ``resize``
            (:func:`wsod.proposals.image.read_working_image`); None: read at full size.

    Returns:
        ``(bboxes (N,4) float32 x1y1x2y2 in the image's full pixels, scores (N,) float32)``,
        scores descending.
    """
    from wsod.proposals.image import read_working_image

    img, (fx, fy) = read_working_image(path, size, params["resize"])
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
        raise ValueError(f"unknown proposal method {params['method']!r}; choose {PIXEL_METHODS}")
    if (fx, fy) != (1.0, 1.0):  # decoded reduced: back to the image's full pixels
        boxes = (boxes * np.array([fx, fy, fx, fy], np.float32)).astype(np.float32)
    h, w = img.shape[:2]
    w, h = size if size is not None else (w, h)
    return postprocess(
        boxes, scores, w, h, min_size=params["min_size"], max_boxes=params["max_boxes"]
    )


def whole_image(images: Sequence[Mapping]) -> dict[str, dict[str, np.ndarray]]:
    """One box = the image per split image (from the split's sizes, no pixel read)."""
    return {
        im["file_name"]: {
            "bboxes": np.array([[0, 0, im["width"], im["height"]]], np.float32),
            "scores": np.ones(1, np.float32),
        }
        for im in images
    }


# --------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def exit_with_parent(parent_pid: int) -> None:
    """Make this (worker) process end when ``parent_pid`` dies.

    Linux: the kernel sends SIGTERM at the parent's death (``PR_SET_PDEATHSIG``); elsewhere a
    daemon thread polls the parent id. Either way, a parent already gone means exit now.
    """
    import signal

    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:  # died before the signal was armed
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="wsod-parent-watchdog", daemon=True).start()


def _init_worker(params: Mapping, cache_root: str, parent_pid: int | None = None) -> None:
    import cv2

    if parent_pid is not None:
        exit_with_parent(parent_pid)
    cv2.setNumThreads(1)  # one process per core; OpenCV's own threads would oversubscribe
    _WORKER["params"] = dict(params)
    _WORKER["cache"] = ProposalCache(cache_root, params)


def _work(task: tuple) -> tuple[str, int, float]:
    key, path, digest, size = task
    t0 = time.time()
    try:
        boxes, scores = compute_image(path, key, _WORKER["params"], size)
    except Exception as e:
        raise RuntimeError(f"{path}: proposals failed: {e}") from e
    _WORKER["cache"].put(key, digest, boxes, scores)
    return key, len(boxes), time.time() - t0


# seconds on one image from which the stage says so (selective search at its default working
# size takes a second or two an image on one core)
SLOW_IMAGE_SECONDS = 30.0
# a longer side from which an image read at full size (resize off) makes selective search slow
LARGE_SIDE = 2000


def _note_time(task: tuple, secs: float, params: Mapping) -> None:
    """Warn about an image that took :data:`SLOW_IMAGE_SECONDS` or more, naming it and the fix."""
    if secs < SLOW_IMAGE_SECONDS:
        return
    key, _, _, size = task
    dims = f"{size[0]}x{size[1]}, " if size else ""
    work = f"working size {params['resize']} px" if params["resize"] else "resize off"
    warnings.warn(
        f"{key}: proposals took {secs:.0f} s on this image ({dims}{work}); a smaller "
        "proposals.resize (--resize) bounds the time per image",
        stacklevel=2,
    )


def _compute_serial(tasks: list[tuple], params: Mapping, cache: ProposalCache, bar):
    _init_worker(params, str(cache.dir.parent))
    total = 0.0
    for t in tasks:
        secs = _work(t)[2]
        _note_time(t, secs, params)
        total += secs
        bar.update(1)
    return total


def _compute_pool(
    tasks: list[tuple], params: Mapping, cache: ProposalCache, workers: int, bar
) -> float:
    import multiprocessing as mp

    total = 0.0
    ex = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),
        initializer=_init_worker,
        initargs=(dict(params), str(cache.dir.parent), os.getpid()),
    )
    try:
        pending = {ex.submit(_work, t): t for t in tasks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_EXCEPTION, timeout=5)
            for f in done:
                secs = f.result()[2]  # re-raises a worker's error (naming the image)
                _note_time(pending.pop(f), secs, params)
                total += secs
                bar.update(1)
    except BrokenProcessPool as e:
        raise WorkerDiedError(
            "a proposal worker process died (killed, or out of memory: try fewer --workers); "
            f"the images finished so far are cached in {cache.dir}: rerun the same command "
            "to resume"
        ) from e
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    return total


def compute_all(tasks: list[tuple], params: Mapping, cache: ProposalCache, workers: int) -> float:
    """Compute and cache ``tasks`` (``(key, image path, image digest, (width, height) or
    None)``); return the summed compute seconds. An image taking :data:`SLOW_IMAGE_SECONDS` or
    more is named in a warning.

    Raises:
        WorkerDiedError: a worker process died (the message says how to resume).
    """
    from wsod.utils.progress import progress

    bar = progress(
        total=len(tasks), desc=f"proposals ({params['method']})", unit="img", dynamic_ncols=True
    )
    try:
        if workers <= 1:
            return _compute_serial(tasks, params, cache, bar)
        return _compute_pool(tasks, params, cache, workers, bar)
    finally:
        bar.close()


def compute_split(
    keys: Sequence[str],
    root: Path,
    params: Mapping,
    cache_dir: str | os.PathLike,
    workers: int = 1,
    sizes: Mapping[str, tuple[int, int]] | None = None,
) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """Proposals of the images ``root / key`` for ``keys``, computing only uncached ones.

    Args:
        keys: split ``file_name`` values, in output order.
        root: the data root the keys are relative to.
        params: ``method``, ``mode``, ``max_boxes``, ``min_size``, ``resize``, ``seed``,
            ``edge_model`` (they also name the cache sub-folder).
        cache_dir: the per-image cache root (results keyed by image name and content: one
            root can serve several runs and datasets).
        workers: processes (``spawn``; a script calling this with ``workers > 1`` needs the
            ``if __name__ == '__main__':`` guard).
        sizes: ``{key: (width, height)}`` as the split records them (checked against the
            pixels; large images are decoded reduced); None: read every image at full size.

    Returns:
        ``(proposals in keys order, stats)``; stats: ``computed``, ``cached``,
        ``seconds_per_image`` (compute time per computed image, all workers summed; None when
        nothing was computed), ``cache_dir``.
    """
    from wsod.utils import cpu_share

    cache = ProposalCache(cache_dir, params)
    cache.prepare()
    digests = {k: image_digest(root / k) for k in keys}
    sizes = sizes or {}
    tasks = [
        (k, str(root / k), digests[k], sizes.get(k)) for k in keys if not cache.has(k, digests[k])
    ]
    large = [k for k in keys if max(sizes.get(k, (0, 0))) > LARGE_SIDE]
    if large and not params.get("resize") and params["method"] in PIXEL_METHODS:
        warnings.warn(
            f"{len(large)} images have a side over {LARGE_SIDE} px (e.g. {large[0]}) and "
            "proposals.resize is off: selective search may take minutes on each; set a working "
            "size (resize=500)",
            stacklevel=2,
        )
    with cpu_share.slot():  # PyTorch stages run at once (make -j2) leave it the cores
        secs = compute_all(tasks, params, cache, max(1, int(workers))) if tasks else 0.0
    props = {k: cache.get(k, digests[k]) for k in keys}
    stats = {
        "computed": len(tasks),
        "cached": len(keys) - len(tasks),
        "seconds_per_image": round(secs / len(tasks), 4) if tasks else None,
        "cache_dir": str(cache.dir),
    }
    return props, stats
