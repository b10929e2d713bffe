"""Predict stage: the pipeline's final detector on new images.

Inputs:
    ``images``: image files, folders (their image files, not recursive), glob patterns
    (``**`` recursive) or list files (``.txt``/``.lst``: one path a line, relative ones from the
    list file's folder), in any mix; each image is taken once, in the order given (a folder's
    and a glob's files sorted by name).
    ``strong_dir``: a strong stage work dir (``make strong``): ``strong_model.json`` names its
    final checkpoint and its resolved config ``strong_config.py``. Both are plain mmdet files:
    mmdet's own ``init_detector(config, checkpoint)``, ``DetInferencer`` and ``tools/test.py``
    load them too (the config brings wsod's modules in through ``custom_imports``). Detection is
    mmdet's ``init_detector`` + ``inference_detector`` (the config's test pipeline), one image
    at a time, on the image as mmdet's ``LoadImageFromFile`` reads it.
    ``rescore``: optional, as the pipeline's ``rescore_by_black_box``: the black box (the weak
    stage's trained model, ``weak_dir`` + ``weak_config``) is run on the same new images and
    each detection's score is multiplied by the black box's confidence in the class for the
    image (:mod:`wsod.rescoring`; ``black_box`` runs it). ``'image'``: a CAM black box's class probability (one
    whole-image proposal per image); ``'detections'``: the black box's highest detection score
    of the class, on proposals computed for the new images with ``proposals`` (the pipeline's
    proposal settings). A black box imported from another codebase (no weak model) cannot run
    on new images, so it cannot rescore them.

Outputs in ``out_dir`` (each json written atomically with a ``.meta.json`` sidecar):
    ``images.json``: the images read, in the weak-label split format (``id``, ``file_name``
    relative to ``info.data_root``, ``width``, ``height``, empty ``labels``: new images carry no
    tags) with the detector's categories, so the results are self-describing and other stages
    (``wsod weak --infer``, ``wsod rescore --split``) take it as a split;
    ``detections.json``: COCO results (``image_id`` of ``images.json``, ``category_id`` = class
    index + 1, ``bbox`` xywh absolute pixels, ``score``), the pipeline's output (rescored when
    ``rescore`` is set; then ``strong_dets.json`` holds the detector's own scores and
    ``black_box_dets.json`` the black box's output);
    ``vis/<file_name>``: each image with its detections scoring above ``draw_thr`` drawn (box,
    class, score) by mmdet's ``DetLocalVisualizer``.

Unreadable images: each is reported on stderr by name and skipped (listed in the meta's
``skipped``); the stage stops only when no image at all can be read. No ground truth is read.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod import contracts
from wsod.report.drawing import draw_detections
from wsod.rescoring import image_confidence, rescore_detections
from wsod.utils import cpu_share
from wsod.utils.io import read_json, write_json_artifact
from wsod.utils.progress import progress

__all__ = [
    "PredictError",
    "collect_images",
    "detect_images",
    "draw_detections",
    "find_strong_model",
    "images_split",
    "load_detector",
    "run",
]

STAGE = "predict"
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
LIST_EXTENSIONS = (".txt", ".lst")
RESCORE_MODES = ("image", "detections")
# (split_file, out_dir, mode, weak_dir, *, config, cfg_options, proposals) -> the black box's
# detections json on the split's images (``<out_dir>/black_box_dets.json``)
BlackBox = Callable[..., Path]


class PredictError(ValueError):
    """Bad input to the predict stage; the message names the file and the fix."""


# --------------------------------------------------------------------------- inputs
def _is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_EXTENSIONS


def _read_list(path: Path) -> list[Path]:
    """The image paths of a list file (one a line, ``#`` comments, relative paths from the list
    file's folder).

    Raises:
        PredictError: a file none of whose lines names an image (not a list of images: e.g.
            notes), or a line naming a missing image (the list and the line are named).
    """
    entries = [
        (n, ln.strip())
        for n, ln in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if ln.strip() and not ln.strip().startswith("#")
    ]
    if entries and not any(_is_image(Path(ln)) for _, ln in entries):
        raise PredictError(
            f"{path}: not a list of images (no line names a {'/'.join(IMAGE_EXTENSIONS)} "
            "file); a list file holds one image path a line"
        )
    found = []
    for n, line in entries:
        p = Path(line) if Path(line).is_absolute() else path.parent / line
        if not p.is_file():
            raise PredictError(
                f"{path}:{n}: {line}: no such image (relative paths are read from "
                f"{path.parent}); fix the line or remove it"
            )
        found.append(p)
    return found


def _expand(source: str) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and _is_image(p))
    if path.is_file() and path.suffix.lower() in LIST_EXTENSIONS:
        return _read_list(path)
    if path.is_file() and not _is_image(path):
        raise PredictError(
            f"{path}: neither an image ({', '.join(IMAGE_EXTENSIONS)}) nor a list file "
            f"({', '.join(LIST_EXTENSIONS)}: one image path a line)"
        )
    if path.is_file():
        return [path]
    if glob.has_magic(source):
        return sorted(Path(p) for p in glob.glob(source, recursive=True) if _is_image(Path(p)))
    raise PredictError(f"{source}: no such image, folder, glob or list file")


def collect_images(sources: Sequence[str | os.PathLike]) -> list[Path]:
    """The image paths named by ``sources`` (files, folders, globs, list files), each once.

    Raises:
        PredictError: a source names nothing, or no image at all was found.
    """
    seen: dict[Path, None] = {}
    for source in sources:
        found = _expand(str(source))
        if not found:
            raise PredictError(
                f"{source}: no image files there (extensions {', '.join(IMAGE_EXTENSIONS)})"
            )
        for p in found:
            seen.setdefault(p.resolve(), None)
    if not seen:
        raise PredictError("no images given: name image files, folders, globs or list files")
    return list(seen)


def find_strong_model(strong_dir: str | os.PathLike) -> dict:
    """``{"config", "checkpoint", "classes", "model_file"}`` of a strong work dir.

    Raises:
        PredictError: no work dir, no ``strong_model.json``, or the files it names are gone
            (the message names the path and ``make strong``, which makes them).
    """
    work = Path(strong_dir)
    fix = (
        "no trained run here: train the pipeline first, `make all PIPELINE=...` (the same "
        "RUN/QUICK as for make predict; `wsod strong` for the detector alone)"
    )
    model_file = work / "strong_model.json"
    if not work.is_dir():
        raise PredictError(f"{work}: no such strong work dir; {fix}")
    if not model_file.is_file():
        raise PredictError(f"{model_file}: not found, {work} holds no trained detector; {fix}")
    record = read_json(model_file)
    found = {"model_file": str(model_file), "classes": list(record.get("classes") or [])}
    for key in ("config", "checkpoint"):
        path = Path(record[key])
        if (work / path.name).is_file():  # the stage writes both here; the dir may have moved
            path = work / path.name
        if not path.is_file():
            raise PredictError(f"{path}: the {key} named by {model_file} is missing; {fix}")
        found[key] = str(path)
    return found


def _device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda:0" if torch.cuda.is_available() else "cpu"


# --------------------------------------------------------------------------- detection
def _read_image(path: Path) -> np.ndarray | None:
    """BGR uint8 (H, W, 3) as mmdet's ``LoadImageFromFile`` reads it; None if unreadable."""
    import mmcv

    try:
        return mmcv.imread(str(path))
    except Exception:  # noqa: BLE001 - any decoding failure means "unreadable"
        return None


def load_detector(strong: Mapping, device: str):
    """mmdet's ``init_detector`` on the work dir's config + checkpoint, and its test pipeline
    fed with loaded arrays (what ``inference_detector`` builds for arrays)."""
    from mmcv.transforms import Compose
    from mmdet.apis import init_detector
    from mmdet.utils import get_test_pipeline_cfg
    from mmengine.config import Config

    import wsod.models  # noqa: F401  (registers wsod's modules, as the config's custom_imports)
    from wsod.models.mixed_precision import detection_autocast
    from wsod.training.proposal_inputs import reads_proposals

    cfg = Config.fromfile(strong["config"])
    if reads_proposals(cfg):
        raise PredictError(
            f"{strong['config']}: this detector reads precomputed proposals (reads_proposals = "
            "True, e.g. Fast R-CNN) and `wsod predict` computes none for new images yet; "
            "detect with `wsod strong --infer SPLIT:PROPOSALS:OUT` on a split of them"
        )
    # no ImageNet download: the checkpoint has every weight (as init_detector does by default;
    # a semi-supervised model, e.g. SoftTeacher, holds the backbone in model.detector)
    model_cfg = cfg.model.get("detector", cfg.model)
    model_cfg.backbone.init_cfg = None
    model = init_detector(
        cfg, strong["checkpoint"], palette="random", device=device, cfg_options={}
    )
    pipeline = get_test_pipeline_cfg(model.cfg.copy())
    pipeline[0].type = "mmdet.LoadImageFromNDArray"
    model.wsod_precision = detection_autocast(cfg, model)  # the stage's precision
    return model, Compose(pipeline)


def detect_images(
    model: Any, pipeline: Any, paths: Sequence[Path], root: Path, *, max_per_image: int = 300
) -> tuple[list[dict], list[dict], list[str]]:
    """Detect on each image (a progress bar on stderr); unreadable images are skipped.

    Returns:
        ``(images, detections, skipped)``: split-format image entries (ids 1..N in order),
        COCO results (best first per image, at most ``max_per_image``; label ``i`` -> category
        ``i + 1``), and the paths that could not be read.
    """
    from mmdet.apis import inference_detector

    images, dets, skipped = [], [], []
    for path in progress(paths, desc="predict", unit="img"):
        img = _read_image(path)
        if img is None:
            print(f"wsod predict: {path}: not a readable image, skipped", file=sys.stderr)
            skipped.append(str(path))
            continue
        image_id = len(images) + 1
        with getattr(model, "wsod_precision", contextlib.nullcontext)():
            inst = inference_detector(model, img, test_pipeline=pipeline).pred_instances
        scores = inst.scores.detach().cpu().numpy().astype(np.float64)
        order = np.argsort(-scores, kind="stable")[:max_per_image]
        boxes = inst.bboxes.detach().cpu().numpy().astype(np.float64)[order]
        labels = inst.labels.detach().cpu().numpy().astype(np.int64)[order]
        dets += contracts.make_detections(image_id, boxes, scores[order], labels + 1)
        rel = path.relative_to(root).as_posix()
        h, w = img.shape[:2]
        images.append({"id": image_id, "file_name": rel, "width": w, "height": h, "labels": []})
    return images, dets, skipped


def images_split(images: list[dict], classes: Sequence[str], root: Path, sources) -> dict:
    """The images read, as a weak-label split (no tags) with the detector's classes."""
    return {
        "info": {
            "data_root": str(root),
            "split": STAGE,
            "sources": [str(s) for s in sources],
            "labels": "none: new images carry no tags",
        },
        "images": images,
        "categories": [{"id": i + 1, "name": c} for i, c in enumerate(classes)],
    }


# --------------------------------------------------------------------------- stage
def run(
    images: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    strong_dir: str | os.PathLike,
    device: str | None = None,
    draw_thr: float = 0.3,
    rescore: str | None = None,
    weak_dir: str | os.PathLike | None = None,
    weak_config: str | os.PathLike | None = None,
    weak_cfg_options: Mapping | None = None,
    proposals: Mapping | None = None,
    black_box: BlackBox | None = None,
) -> dict:
    """Detect with the strong work dir's detector on ``images``; write results and drawings.

    Args:
        images: image files, folders, globs or list files (see the module docstring).
        out_dir: ``images.json``, ``detections.json`` (+ ``.meta.json``) and ``vis/``.
        strong_dir: the strong stage's work dir (``strong_model.json``).
        device: torch device (default ``cuda:0`` when there is a GPU, else ``cpu``).
        draw_thr: draw detections scoring above this (all are written to the json).
        rescore: None, ``'image'`` or ``'detections'`` (see the module docstring).
        weak_dir: the weak stage's work dir (its trained black box), for ``rescore``.
        weak_config: the weak stage's config (the pipeline's ``weak.config``), for ``rescore``.
        weak_cfg_options: the weak stage's ``cfg_options`` (the pipeline's), for ``rescore``.
        proposals: ``wsod.stages.proposals.run`` keywords (the pipeline's ``proposals``), for
            ``rescore='detections'``.
        black_box: runs the black box on the new images, for ``rescore`` (:data:`BlackBox`;
            ``wsod predict`` passes :func:`wsod.commands.predict.run_black_box`).

    Returns:
        ``{"images", "skipped", "detections", "out", "images_json", "vis", "rescored"}``.

    Raises:
        PredictError: bad inputs (the message names the file and the fix).
    """
    started = time.time()
    _check_rescore(rescore, weak_dir, weak_config)
    _check_black_box(rescore, black_box)
    paths = collect_images(images)
    strong = find_strong_model(strong_dir)
    out_dir = Path(out_dir)
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    model, pipeline = load_detector(strong, _device(device))
    with cpu_share.shared_threads():  # beside a running `make all`, half the cores each
        imgs, dets, skipped = detect_images(model, pipeline, paths, root)
    if not imgs:
        raise PredictError(f"none of the {len(paths)} images could be read (e.g. {skipped[0]})")
    split = images_split(imgs, model.dataset_meta["classes"], root, images)
    meta = {
        "stage": STAGE,
        "config": {"config": strong["config"], "checkpoint": strong["checkpoint"]},
        "started": started,
        "extra": {"skipped": skipped, "rescore": rescore, "classes": model.dataset_meta["classes"]},
    }
    split_file = out_dir / "images.json"
    write_json_artifact(split_file, contracts.validate_split(split, str(split_file)), **meta)
    inputs = [split_file, strong["checkpoint"], strong["config"]]
    if rescore is not None:  # the detector's own scores stay beside the rescored ones
        write_json_artifact(out_dir / "strong_dets.json", dets, inputs=inputs, **meta)
        bb = {"config": weak_config, "cfg_options": weak_cfg_options, "proposals": proposals}
        bb_out = black_box(split_file, out_dir, rescore, weak_dir, **bb)
        dets = _rescored(dets, split_file, bb_out)
        inputs.append(bb_out)
    out = out_dir / "detections.json"
    dets = contracts.validate_detections(dets, split, str(out))
    write_json_artifact(out, dets, inputs=inputs, **meta)
    vis = draw_detections(split, dets, out_dir / "vis", draw_thr=draw_thr)
    print(
        f"wsod predict: {len(dets)} detections on {len(imgs)} images -> {out}; drawn: "
        f"{out_dir / 'vis'}" + (f"; {len(skipped)} unreadable skipped" if skipped else "")
    )
    summary = {"images": len(imgs), "skipped": skipped, "detections": len(dets), "out": str(out)}
    return {**summary, "images_json": str(split_file), "vis": vis, "rescored": rescore}


def _check_black_box(rescore: str | None, black_box: BlackBox | None) -> None:
    """The black box on the new images is run by the caller's ``black_box`` (a stage does not
    call the proposals and weak stages itself)."""
    if rescore is not None and black_box is None:
        raise PredictError("rescore needs black_box= (wsod.commands.predict.run_black_box)")


def _rescored(dets: list[dict], split_file: Path, black_box_dets: Path) -> list[dict]:
    """``dets`` x the black box's confidence in each class for each image
    (:func:`wsod.rescoring.rescore_detections`)."""
    bb = contracts.load_detections(black_box_dets, contracts.load_split(split_file))
    return rescore_detections(dets, image_confidence(bb))


def _check_rescore(rescore: str | None, weak_dir, weak_config) -> None:
    if rescore is not None and rescore not in RESCORE_MODES:
        raise PredictError(f"rescore={rescore!r}: want one of {RESCORE_MODES} or None")
    if rescore is not None and (weak_dir is None or weak_config is None):
        raise PredictError(
            "rescoring runs the black box on the new images: give weak_dir (--weak-dir) and "
            "weak_config (--weak-config, or --pipeline)"
        )
    if rescore is not None and not (Path(weak_dir) / "weak_model.json").is_file():
        raise PredictError(
            f"{Path(weak_dir) / 'weak_model.json'}: no trained black box to run on the new images "
            "(train the pipeline first: `make all PIPELINE=...`; an imported black box cannot "
            "run on them: --no-rescore)"
        )
