"""Strong stage: train an mmdetection detector on pseudo labels, then detect with it.

Inputs:
    ``config``: any mmdet 3.x detector config whose train dataset is a ``CocoDataset`` (possibly
    inside wrappers such as ``RepeatDataset``) and whose test evaluator may be replaced; ours are
    in ``configs/faster_rcnn/`` (iteration-based schedules, see ``configs/_base_/schedules``).
    ``pseudo_labels``: COCO instances json from ``wsod denoise``
    (:func:`wsod.contracts.load_pseudo_labels`; ``score``/``weight`` per box), ``file_name``
    relative to the dataset root. Or, instead, ``fully_supervised_gt``: the training split's
    real boxes (eval-only file) for the *fully supervised reference* (an upper bound): same
    config, same schedule, real boxes. Its outputs say so (meta ``supervision``) and their
    default names start with ``fsd_``.
    ``infer``: ``[(split_json, out_json or None), ...]`` weak-label splits to detect on (val for
    evaluation, train for self-training rounds).

Data root: ``data_root`` (argument) wins; else the training file's ``info.data_root``; else
the split file named by its ``info.split_file`` (that split's ``info.data_root``). Each
``infer`` split uses its own ``info.data_root``. Relative roots resolve as in
:func:`wsod.contracts.resolve_data_root`.

Outputs in ``work_dir`` (each written atomically with a ``.meta.json`` sidecar):
    ``[fsd_]train_annotations.json``: the training boxes normalised for mmdet's
    ``CocoDataset`` (``area``, ``iscrowd``, unique ids; ground-truth ``difficult`` boxes become
    ``iscrowd`` = ignored, as mmdet's VOC loader does); ``[fsd_]strong_config.py``: the resolved
    config; ``iter_*.pth`` + ``last_checkpoint`` (mmengine); ``strong_run.json``: which run the
    work dir's checkpoints belong to (fingerprint of config + seed + boxes, supervision);
    ``[fsd_]strong_model.json``: the final checkpoint, iterations, classes, supervision; per ``infer`` pair a COCO results json
    (default ``<work_dir>/[fsd_]<split stem>_dets.json``; label ``i`` -> category id ``i + 1``).

Invariants: categories are ids ``1..K`` in class order and every ``infer`` split has the same
classes (checked); each model ``num_classes`` (except the RPN's) is set to ``K``;
``resume=True`` continues from ``work_dir``'s last checkpoint (a finished run only re-infers);
a work dir holding another run (other boxes, config or seed) is not resumed: its checkpoints
move to ``<work_dir>/stale/<time>/`` and training starts over; a NaN/inf
loss stops with :class:`wsod.models.strong.NonFiniteLossError` naming the losses and the last
good checkpoint (checkpoints every ``default_hooks.checkpoint.interval`` iterations and at the
end). The training side reads no ground-truth file unless ``fully_supervised_gt`` is given.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod import contracts
from wsod.utils import runner as rn
from wsod.utils.io import read_json, write_json_artifact, write_text

__all__ = ["StrongStageError", "build_train_annotations", "load_strong_config", "run"]

PSEUDO = "pseudo labels"
FULLY_SUPERVISED = "ground-truth boxes (fully supervised reference, an upper bound)"


class StrongStageError(ValueError):
    """Bad input to the strong stage; the message names the file and the fix."""


# --------------------------------------------------------------------------- training boxes
def _check_categories(cats: Sequence[Mapping], where: str) -> list[str]:
    ids = [int(c["id"]) for c in sorted(cats, key=lambda c: c["id"])]
    if ids != list(range(1, len(ids) + 1)):
        raise StrongStageError(
            f"{where}: category ids must be 1..K (got {ids}); regenerate the split with `wsod data`"
        )
    return contracts.category_names({"categories": list(cats)})


def build_train_annotations(data: Mapping, *, fully_supervised: bool = False) -> dict:
    """Normalise pseudo labels (or real boxes) into what mmdet's ``CocoDataset`` trains on.

    Args:
        data: COCO instances dict (``images``, ``categories``, ``annotations`` with ``bbox``
            xywh and, for pseudo labels, ``score`` and optionally ``weight``).
        fully_supervised: ``data`` holds real boxes: a ``difficult`` box becomes ``iscrowd`` 1
            (mmdet ignores it in training, as its VOC loader does).

    Returns:
        COCO instances dict: images ``{id, file_name, width, height}``, categories sorted by
        id, annotations ``{id (1..N), image_id, category_id, bbox, area = w*h, iscrowd, score,
        weight}`` (``score``/``weight`` default 1.0).
    """
    images = [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in data["images"]]
    anns = []
    for i, a in enumerate(data["annotations"], start=1):
        x, y, w, h = (float(v) for v in a["bbox"])
        crowd = (
            int(bool(a.get("difficult", 0))) if fully_supervised else int(bool(a.get("iscrowd", 0)))
        )
        score = float(a.get("score", 1.0))
        anns.append(
            {
                "id": i,
                "image_id": a["image_id"],
                "category_id": a["category_id"],
                "bbox": [x, y, w, h],
                "area": w * h,
                "iscrowd": crowd,
                "score": score,
                "weight": float(a.get("weight", score if not fully_supervised else 1.0)),
            }
        )
    cats = sorted(
        ({"id": c["id"], "name": c["name"]} for c in data["categories"]), key=lambda c: c["id"]
    )
    return {
        "info": dict(data.get("info", {})),
        "images": images,
        "categories": cats,
        "annotations": anns,
    }


def _resolve_root(root: str | os.PathLike, ref_file: str | os.PathLike) -> Path:
    from wsod.contracts import resolve_data_root

    return resolve_data_root({"info": {"data_root": str(root)}}, ref_file)


def _train_data_root(
    data: Mapping, path: str | os.PathLike, data_root: str | os.PathLike | None
) -> Path:
    if data_root is not None:
        return Path(data_root)
    info = data.get("info") or {}
    if info.get("data_root"):
        return _resolve_root(info["data_root"], path)
    split_file = info.get("split_file")
    if split_file:
        split_path = Path(split_file)
        if not split_path.is_absolute() and not split_path.is_file():
            split_path = Path(path).parent / split_path
        split = contracts.load_split(split_path)
        return _resolve_root(split["info"]["data_root"], split_path)
    raise StrongStageError(
        f"{path}: no info.data_root (nor info.split_file) says where the "
        "images are; pass data_root= (--data-root DIR)"
    )


# --------------------------------------------------------------------------- config
def load_strong_config(config: str | os.PathLike, cfg_options: Mapping | None = None):
    """``Config.fromfile`` + ``--cfg-options``; imports ``wsod.models`` (registries, resume)."""
    return rn.load_config(
        config, cfg_options, error=StrongStageError, hint="see configs/faster_rcnn/"
    )


def _inner_dataset(ds_cfg: Any, where: str) -> Any:
    """The innermost dataset dict of (possibly wrapped) ``ds_cfg``: the one with ann_file."""
    node = ds_cfg
    while node is not None and "ann_file" not in node and "dataset" in node:
        node = node["dataset"]
    if node is None or "ann_file" not in node:
        raise StrongStageError(
            f"{where}: the config's dataset has no ann_file; the strong "
            "stage needs a CocoDataset (see configs/_base_/datasets/)"
        )
    return node


def _set_num_classes(node: Any, k: int, in_rpn: bool = False) -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "num_classes" and not in_rpn:
                node[key] = k
            else:
                _set_num_classes(value, k, in_rpn or key == "rpn_head")
    elif isinstance(node, list):
        for value in node:
            _set_num_classes(value, k, in_rpn)


def _ensure_finite_loss_hook(cfg) -> None:
    hooks = list(cfg.get("custom_hooks") or [])
    if not any(h.get("type") == "WSODFiniteLossHook" for h in hooks):
        hooks.insert(0, {"type": "WSODFiniteLossHook", "interval": 1})
    cfg.custom_hooks = hooks


def _set_max_iters(cfg, max_iters: int) -> None:
    rn.set_max_iters(
        cfg,
        max_iters,
        error=StrongStageError,
        hint="use --cfg-options train_cfg.max_epochs=N instead",
    )
    cfg.train_cfg.val_interval = int(max_iters)


# --------------------------------------------------------------------------- stage
def run(
    config: str | os.PathLike,
    pseudo_labels: str | os.PathLike | None,
    work_dir: str | os.PathLike,
    *,
    infer: Sequence[tuple[str | os.PathLike, str | os.PathLike | None]] | None = None,
    cfg_options: Mapping | None = None,
    resume: bool = True,
    seed: int = 0,
    max_iters: int | None = None,
    fully_supervised_gt: str | os.PathLike | None = None,
    data_root: str | os.PathLike | None = None,
) -> dict:
    """Train ``config`` on pseudo labels (or real boxes) with mmengine's Runner, then infer.

    Args:
        config: mmdet config file (e.g.
            ``configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py``).
        pseudo_labels: pseudo-label COCO instances json (boxes xywh + ``score``); None when
            ``fully_supervised_gt`` is given.
        work_dir: checkpoints, logs, resolved config and default outputs.
        infer: ``(split_json, out_json)`` pairs; ``out_json`` None -> ``work_dir /
            "[fsd_]<split stem>_dets.json"``.
        cfg_options: dotted-key overrides merged into the config (``--cfg-options``).
        resume: continue from ``work_dir``'s last checkpoint when there is one.
        seed: mmengine ``randomness.seed``.
        max_iters: override the iteration-based schedule's length (tests, smoke runs).
        fully_supervised_gt: the training images' real boxes instead of pseudo labels (the
            fully supervised reference; an upper bound, never a weakly supervised result).
        data_root: where images are; default from the training file (see module docstring).

    Returns:
        ``{"checkpoint", "config", "work_dir", "supervision", "iterations", "resumed_from",
        "outputs": [result json paths], "train_annotations"}``.

    Raises:
        StrongStageError: bad inputs (message names the file and the fix).
        wsod.models.strong.NonFiniteLossError: the loss became NaN/inf.
    """
    started = time.time()
    if (pseudo_labels is None) == (fully_supervised_gt is None):
        raise StrongStageError(
            "give exactly one of pseudo_labels (--pseudo-labels) and "
            "fully_supervised_gt (--fully-supervised-gt)"
        )
    fully = fully_supervised_gt is not None
    train_file = Path(fully_supervised_gt if fully else pseudo_labels)
    prefix = "fsd_" if fully else ""
    supervision = FULLY_SUPERVISED if fully else PSEUDO
    work_dir = Path(work_dir).resolve()

    # ---- training boxes
    if fully:
        data = contracts.validate_gt(read_json(train_file), where=str(train_file))
    else:
        data = contracts.load_pseudo_labels(train_file)
    classes = _check_categories(data["categories"], str(train_file))
    root = _train_data_root(data, train_file, data_root).resolve()
    if not root.is_dir():
        raise StrongStageError(f"{train_file}: image folder {root} not found; pass --data-root")
    train_ann = build_train_annotations(data, fully_supervised=fully)
    if not train_ann["annotations"]:
        raise StrongStageError(f"{train_file}: no boxes to train on; check the de-noise stage")
    infer_pairs = _infer_pairs(infer, work_dir, prefix)
    infer_splits = []
    for split_path, _ in infer_pairs:
        split = contracts.load_split(split_path)
        if contracts.category_names(split) != classes:
            raise StrongStageError(f"{split_path}: classes differ from those of {train_file}")
        _check_categories(split["categories"], str(split_path))
        infer_splits.append(split)

    # ---- config
    cfg = load_strong_config(config, cfg_options)
    _set_num_classes(cfg.model, len(classes))
    train_ds = _inner_dataset(cfg.train_dataloader.dataset, str(config))
    ann_path = work_dir / f"{prefix}train_annotations.json"
    train_ds.ann_file = str(ann_path)
    train_ds.data_root = str(root)
    train_ds.data_prefix = {"img": ""}
    train_ds.metainfo = {"classes": tuple(classes)}
    if max_iters is not None:
        _set_max_iters(cfg, max_iters)
    _ensure_finite_loss_hook(cfg)
    rn.set_runtime(cfg, work_dir, seed, cfg.get("launcher", "none"))

    run_file = work_dir / "strong_run.json"  # one per work dir: checkpoints are shared
    ann_sha = _sha_of(train_ann)

    def fingerprint_of(version: int) -> str:  # the config's and the training boxes'
        h = hashlib.sha256((rn.run_fingerprint(cfg, [], version=version) + ann_sha).encode())
        return rn.versioned_digest(h, version)

    fingerprint = fingerprint_of(rn.FINGERPRINT_VERSION)
    last = None
    if resume:  # another run's checkpoints (other boxes, config or seed) are moved aside
        last, _ = rn.resume_point(
            work_dir,
            run_file,
            fingerprint,
            lambda rec: rec.get("train_sha256") == ann_sha,
            fingerprint_of(1),
        )
    rn.set_resume(cfg, last)

    meta = {
        "stage": "strong",
        "seed": seed,
        "started": started,
        "extra": {
            "supervision": supervision,
            "fully_supervised": fully,
            "data_root": str(root),
            "classes": classes,
        },
    }
    write_json_artifact(
        ann_path, train_ann, config={"config": str(config)}, inputs=[train_file], **meta
    )
    write_json_artifact(
        run_file,
        {
            "fingerprint": fingerprint,
            "train_sha256": ann_sha,
            "config": str(config),
            "supervision": supervision,
        },
        inputs=[train_file],
        **meta,
    )
    config_out = work_dir / f"{prefix}strong_config.py"
    write_text(config_out, cfg.pretty_text)
    run_cfg = rn.without(cfg, rn.TEST_KEYS)  # the training Runner builds no test loop

    # ---- train
    done = _checkpoint_iter(last) if last else None
    max_iter = (cfg.get("train_cfg") or {}).get("max_iters")
    if done is not None and max_iter is not None and done >= max_iter:
        # finished already: resuming would still replay the whole dataloader (mmengine's
        # IterBasedTrainLoop advances it by the resumed iterations), so go straight to inference
        iterations = done
    else:
        run_cfg.experiment_name = _experiment_name(f"{prefix}strong_train")
        _name_visualizer(run_cfg)
        iterations = rn.train(run_cfg)
    ckpt = rn.trained_checkpoint(work_dir, error=StrongStageError)
    model_file = work_dir / f"{prefix}strong_model.json"
    write_json_artifact(
        model_file,
        {
            "checkpoint": ckpt,
            "config": str(config_out),
            "iterations": iterations,
            "classes": classes,
            "supervision": supervision,
            "resumed_from": last,
        },
        indent=2,
        config=cfg.to_dict(),
        inputs=[train_file],
        **meta,
    )

    # ---- infer
    outputs = []
    for (split_path, out), split in zip(infer_pairs, infer_splits, strict=True):
        outputs.append(
            str(_infer(cfg, ckpt, split_path, split, out, classes, meta, train_file, config))
        )
    return {
        "checkpoint": ckpt,
        "config": str(config_out),
        "work_dir": str(work_dir),
        "supervision": supervision,
        "iterations": iterations,
        "resumed_from": last,
        "outputs": outputs,
        "train_annotations": str(ann_path),
    }


def _infer_pairs(infer, work_dir: Path, prefix: str) -> list[tuple[Path, Path]]:
    pairs = []
    for item in infer or []:
        split_path, out = (item, None) if isinstance(item, (str, os.PathLike)) else item
        split_path = Path(split_path)
        out = Path(out) if out else work_dir / f"{prefix}{split_path.stem}_dets.json"
        pairs.append((split_path, out.resolve()))
    return pairs


def _checkpoint_iter(path: str) -> int | None:
    """The iteration of mmengine's ``iter_<N>.pth`` checkpoint name, else None."""
    import re

    m = re.fullmatch(r"iter_(\d+)\.pth", Path(path).name)
    return int(m.group(1)) if m else None


def _name_visualizer(cfg) -> None:
    """A visualizer named like its Runner (mmengine shares instances by name)."""
    if cfg.get("visualizer"):
        cfg.visualizer.name = cfg.experiment_name


def _experiment_name(what: str) -> str:
    """Unique per Runner: mmengine keys its logger and visualizer instances by this name."""
    import uuid

    return f"{what}_{time.strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:6]}"


def _sha_of(obj: Any) -> str:
    import hashlib
    import json

    payload = {k: obj[k] for k in ("images", "categories", "annotations")}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _infer(
    cfg,
    ckpt: str,
    split_path: Path,
    split: Mapping,
    out: Path,
    classes: list[str],
    meta: Mapping,
    train_file: Path,
    config,
) -> Path:
    """Detect on one split with ``runner.test()``; ``WSODDumpCocoResults`` writes ``out``."""
    test_cfg = rn.without(cfg, rn.TRAIN_KEYS + rn.EVAL_KEYS)
    ds = _inner_dataset(test_cfg.test_dataloader.dataset, str(config))
    ds.ann_file = str(Path(split_path).resolve())
    ds.data_root = str(_resolve_root(split["info"]["data_root"], split_path).resolve())
    ds.data_prefix = {"img": ""}
    ds.metainfo = {"classes": tuple(classes)}
    ds.test_mode = True
    test_cfg.experiment_name = _experiment_name(f"infer_{Path(split_path).stem}")
    _name_visualizer(test_cfg)
    rn.dump_detections(
        test_cfg,
        ckpt,
        out,
        {
            "stage": "strong",
            "seed": meta["seed"],
            "config": {"config": str(config), "checkpoint": ckpt},
            "inputs": [str(split_path), ckpt, str(train_file)],
            "extra": {**meta["extra"], "split": str(split_path)},
        },
        default_evaluator={"type": "WSODDumpCocoResults"},
    )
    return out
