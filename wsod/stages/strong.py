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
    evaluation, train for self-training rounds). ``train_proposals`` and ``(split_json,
    proposals, out_json)`` triples: precomputed proposals for a config with ``reads_proposals =
    True`` (a detector without an RPN, ``projects/fast_rcnn/configs/``; :mod:`wsod.training.proposal_inputs`).

Extra training inputs (:mod:`wsod.training.extra_inputs`): a config with ``strong_inputs =
dict(type=...)`` names a registered plug-in (its module in the config's ``custom_imports``, e.g.
``projects/soft_teacher``'s unlabelled images) that makes one more file beside the training
annotations (e.g. ``[fsd_]unlabeled_images.json``) and points the config's datasets at both;
``train_split`` is passed on to it. That file is in the run's fingerprint.

Data root: ``data_root`` (argument) wins; else the training file's ``info.data_root``; else
the split file named by its ``info.split_file`` (that split's ``info.data_root``). Each
``infer`` split uses its own ``info.data_root``. Relative roots resolve as in
:func:`wsod.contracts.resolve_data_root`.

Outputs in ``work_dir`` (each written atomically with a ``.meta.json`` sidecar):
    ``[fsd_]train_annotations.json``: the training boxes normalised for mmdet's
    ``CocoDataset`` (``area``, ``iscrowd``, unique ids; ground-truth ``difficult`` boxes become
    ``iscrowd`` = ignored, as mmdet's VOC loader does); ``[fsd_]strong_config.py``: the resolved
    config; the plug-in's extra file (``strong_inputs``); ``iter_*.pth`` +
    ``last_checkpoint`` (mmengine); ``strong_run.json``: which run the
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
The flow (config, fingerprint, resume, train, detect) is :mod:`wsod.training`; this module
builds the training annotations and wires them (and the splits to detect on) into the config
(:mod:`wsod.training.coco_dataset`).

Several processes (``--launcher pytorch`` under torchrun, ``slurm`` under srun; examples in
``wsod strong --help``): rank 0 alone writes the files above and moves stale checkpoints, the
other ranks read them; detection runs sharded on every rank (:mod:`wsod.training.dist`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod import contracts
from wsod import training as tr
from wsod.datasets.train_annotations import (
    TrainingFileError,
    build_train_annotations,
    check_categories,
    read_training_boxes,
    resolve_root,
)
from wsod.training import proposal_inputs as props
from wsod.training.coco_dataset import ensure_finite_loss_hook, inner_dataset, set_coco_dataset
from wsod.training.extra_inputs import ExtraInputs, StrongInputs, TrainingSet, build_strong_inputs
from wsod.utils.io import write_json_artifact

__all__ = ["StrongOptions", "StrongStageError", "build_train_annotations", "run"]

PSEUDO = "pseudo labels"
FULLY_SUPERVISED = "ground-truth boxes (fully supervised reference, an upper bound)"


class StrongStageError(ValueError):
    """Bad input to the strong stage; the message names the file and the fix."""


_ERRORS = {"error": StrongStageError, "hint": "see configs/faster_rcnn/"}


# --------------------------------------------------------------------------- schedule
def _set_max_iters(cfg, max_iters: int) -> None:
    hint = "use --cfg-options train_cfg.max_epochs=N instead"
    tr.set_max_iters(cfg, max_iters, error=StrongStageError, hint=hint)
    cfg.train_cfg.val_interval = int(max_iters)


# --------------------------------------------------------------------------- stage
@dataclasses.dataclass(frozen=True)
class StrongOptions(tr.TrainOptions):
    """The strong stage's options: the training flow's (:class:`wsod.training.TrainOptions`)
    and ``init_backbone``, a black box's ``weak_model.json`` whose trained trunk starts the
    backbone instead of ImageNet (:mod:`wsod.training.init_backbone`; None: the config's)."""

    init_backbone: str | os.PathLike | None = None


def run(
    config: str | os.PathLike,
    pseudo_labels: str | os.PathLike | None,
    work_dir: str | os.PathLike,
    *,
    infer: Sequence[tuple] | None = None,
    fully_supervised_gt: str | os.PathLike | None = None,
    data_root: str | os.PathLike | None = None,
    train_split: str | os.PathLike | None = None,
    train_proposals: str | os.PathLike | None = None,
    options: StrongOptions | None = None,
    **values: Any,
) -> dict:
    """Train ``config`` on pseudo labels (or real boxes) with mmengine's Runner, then infer.

    Args:
        config: mmdet config file (``configs/faster_rcnn/``).
        pseudo_labels: pseudo-label COCO instances json (boxes xywh + ``score``); None when
            ``fully_supervised_gt`` is given.
        work_dir: checkpoints, logs, resolved config and default outputs.
        infer: ``(split_json, [proposals or None,] out_json or None)`` (proposals: for a config
            that reads them; None out: ``<work_dir>/[fsd_]<split stem>_dets.json``).
        fully_supervised_gt: the training images' real boxes instead of pseudo labels (the
            fully supervised reference; an upper bound, never a weakly supervised result).
        data_root: where images are; default from the training file (see module docstring).
        train_split: a weak-label split of the training images, for a ``strong_inputs``
            plug-in that needs image labels (e.g. ``projects/soft_teacher``).
        train_proposals: the training images' proposals, only for a config with
            ``reads_proposals = True`` (``projects/fast_rcnn/configs/``).
        options: the stage's options (:class:`StrongOptions`; default: its defaults).
        values: :class:`StrongOptions` fields by name, replacing those of ``options``
            (``run(..., seed=1, max_iters=50)``).

    Returns:
        ``{"checkpoint", "config", "work_dir", "supervision", "iterations", "resumed_from",
        "outputs": [result jsons], "train_annotations", "extra_inputs" (the plug-in's file, or
        None)}``.

    Raises:
        StrongStageError: bad inputs (message names the file and the fix).
        wsod.models.strong.NonFiniteLossError: the loss became NaN/inf.
    """
    started = time.time()
    opts = StrongOptions.of(options, values)
    if (pseudo_labels is None) == (fully_supervised_gt is None):
        raise StrongStageError(
            "give exactly one of pseudo_labels (--pseudo-labels) and "
            "fully_supervised_gt (--fully-supervised-gt)"
        )
    fully = fully_supervised_gt is not None
    train_file, prefix = Path(fully_supervised_gt if fully else pseudo_labels), "fsd_" * fully
    work_dir = Path(work_dir).resolve()
    train_ann, classes, root = _as_stage_error(read_training_boxes, train_file, fully, data_root)
    infer_triples, infer_splits = _infer_splits(infer, work_dir, prefix, classes, train_file)
    backbone = opts.init_backbone
    cfg = tr.prepare_config(
        config, opts, work_dir=work_dir, num_classes=len(classes), init_backbone=backbone, **_ERRORS
    )
    _wire_proposals(cfg, config, (train_proposals, train_file, opts.allow_pickle), infer_triples)
    meta = _meta(opts.seed, started, fully, root, classes)
    ann_path = work_dir / f"{prefix}train_annotations.json"
    split = Path(train_split) if train_split else None
    training = TrainingSet(str(config), train_ann, train_file, split, fully, root, work_dir, prefix)
    plugin, extra = _extra_inputs(cfg, training)
    _wire_training(cfg, config, (ann_path, plugin, extra), root, classes, opts.max_iters)
    train = (train_ann, train_file, train_proposals)
    job, fingerprint = _train_job(cfg, config, ann_path, prefix, train, meta, extra)
    trained = tr.train_or_resume(job, fingerprint, resume=opts.resume, error=StrongStageError)
    outputs = []
    for (split_path, split_props, out), split in zip(infer_triples, infer_splits, strict=True):
        where = (split_path, split, out, train_file, (split_props, opts.allow_pickle))
        outputs.append(str(_infer(cfg, trained.checkpoint, where, classes, meta, config)))
    return _summary(trained, job, ann_path, outputs, extra)


def _summary(trained: tr.Trained, job: tr.TrainJob, ann_path: Path, outputs, extra) -> dict:
    """What :func:`run` returns."""
    summary = {"checkpoint": trained.checkpoint, "config": str(job.config_file)}
    summary.update(work_dir=str(job.work_dir), supervision=job.record["supervision"])
    summary.update(iterations=trained.iterations, resumed_from=trained.resumed_from)
    summary.update(outputs=outputs, train_annotations=str(ann_path))
    return {**summary, "extra_inputs": str(extra.path) if extra else None}


def _extra_inputs(cfg, training: TrainingSet) -> tuple[StrongInputs | None, ExtraInputs | None]:
    """The config's ``strong_inputs`` plug-in and the file it makes (both None without one)."""
    try:
        plugin = build_strong_inputs(cfg, training.config)
        return plugin, plugin.make(cfg, training) if plugin else None
    except ValueError as e:
        raise StrongStageError(str(e)) from e


def _meta(seed: int, started: float, fully: bool, root: Path, classes: list[str]) -> dict:
    """Provenance of every strong artifact (``write_json_artifact``'s keywords)."""
    supervision = FULLY_SUPERVISED if fully else PSEUDO
    extra = {"supervision": supervision, "fully_supervised": fully, "data_root": str(root)}
    extra["classes"] = classes
    return {"stage": "strong", "seed": seed, "started": started, "extra": extra}


def _wire_training(cfg, config, files: tuple, root: Path, classes, max_iters) -> None:
    """The strong stage's training wiring: the training annotations as the (wrapped)
    ``CocoDataset`` (a ``strong_inputs`` plug-in wires them and its file itself;
    ``files = (annotations path, plug-in or None, its ExtraInputs or None)``), the schedule's
    length, the finite-loss hook."""
    ann_path, plugin, extra = files

    def set_dataset(ds_cfg, ann_file: Path) -> None:
        set_coco_dataset(ds_cfg, str(config), ann_file, root, classes, StrongStageError)

    if plugin is None:
        set_dataset(cfg.train_dataloader.dataset, ann_path)
    else:
        try:
            plugin.wire(cfg, set_dataset, ann_path, extra)
        except ValueError as e:
            raise StrongStageError(f"{config}: {e}") from e
    if max_iters is not None:
        _set_max_iters(cfg, max_iters)
    ensure_finite_loss_hook(cfg)


def _wire_proposals(cfg, config, train: tuple, infer_triples) -> None:
    """Refuse proposals and a config that disagree (:func:`~wsod.training.proposal_inputs.
    check_proposals`), then give the training dataset its proposals (``train = (training
    proposals or None, training file, allow_pickle)``)."""
    train_props, train_file, allow_pickle = train
    infer_props = [(s, p) for s, p, _ in infer_triples]
    check = {"allow_pickle": allow_pickle, "error": StrongStageError}
    props.check_proposals(cfg, config, (train_props, train_file), infer_props, **check)
    if train_props is not None:
        inner = inner_dataset(cfg.train_dataloader.dataset, str(config), StrongStageError)
        props.set_proposals(inner, train_props, allow_pickle)


def _as_stage_error(fn, *args):
    """``fn(*args)`` with :class:`TrainingFileError` raised as :class:`StrongStageError`."""
    try:
        return fn(*args)
    except TrainingFileError as e:
        raise StrongStageError(str(e)) from e


def _infer_splits(infer, work_dir: Path, prefix: str, classes, train_file: Path):
    """``(split, proposals or None, out)`` triples (default outputs filled in; ``infer`` items
    are a split, ``(split, out)`` or ``(split, proposals, out)``) and the splits, classes
    checked."""
    triples = []
    for item in infer or []:
        parts = [item] if isinstance(item, (str, os.PathLike)) else list(item)
        if len(parts) not in (1, 2, 3) or not parts[0]:
            raise StrongStageError(f"infer entry {item!r}: want (split, [proposals,] out)")
        split_props = parts.pop(1) if len(parts) == 3 else None
        split_path, out = Path(parts[0]), (parts[1] if len(parts) == 2 else None)
        out = Path(out) if out else work_dir / f"{prefix}{split_path.stem}_dets.json"
        triples.append((split_path, Path(split_props) if split_props else None, out.resolve()))
    splits = []
    for split_path, _, _ in triples:
        split = contracts.load_split(split_path)
        if contracts.category_names(split) != classes:
            raise StrongStageError(f"{split_path}: classes differ from those of {train_file}")
        _as_stage_error(check_categories, split["categories"], str(split_path))
        splits.append(split)
    return triples, splits


def _train_job(cfg, config, ann_path: Path, prefix: str, train, meta, extra: ExtraInputs | None):
    """The strong stage's :class:`~wsod.training.TrainJob`: rank 0 writes the training
    annotations (and a plug-in's extra file) the datasets read; the fingerprint is the config's
    and the boxes' (and the extra file's, and the proposals' content) (``train = (training
    annotations, training file, training proposals or None)``)."""
    train_ann, train_file, train_props = train
    work_dir = ann_path.parent
    ann_sha = _sha_of(train_ann)
    extra_sha = _sha_of(extra.data, ("images", "categories")) if extra else ""
    props_sha = props.proposals_digest(train_props)  # '' without: older runs still resume
    inputs = [train_file, *(extra.inputs if extra else []), *[p for p in [train_props] if p]]

    hashed = [train_props] if train_props else []  # its contents: props_sha

    def fingerprint_of(version: int) -> str:  # the config's and the training images'
        config_sha = tr.run_fingerprint(cfg, [], version=version, hashed_elsewhere=hashed)
        digest = config_sha + ann_sha + extra_sha + props_sha
        return tr.versioned_digest(hashlib.sha256(digest.encode()), version)

    def write_inputs() -> None:  # rank 0, validated on write ...
        contracts.validate_train_annotations(train_ann, where=str(ann_path))
        kw = {"config": {"config": str(config)}, "inputs": inputs, **meta}
        write_json_artifact(ann_path, train_ann, **kw)
        if extra:
            contracts.validate_split(extra.data, where=str(extra.path))
            write_json_artifact(extra.path, extra.data, **kw)

    def read_inputs() -> None:  # ... and on read
        contracts.load_train_annotations(ann_path)
        if extra:
            contracts.load_split(extra.path)

    supervision = meta["extra"]["supervision"]
    extra_record = {f"{extra.name}_sha256": extra_sha, **extra.record} if extra else {}
    if train_props:
        extra_record.update(proposals=str(train_props), proposals_sha256=props_sha)
    job = tr.TrainJob(
        stage="strong",
        cfg=cfg,
        config=config,
        work_dir=work_dir,
        run_file=work_dir / "strong_run.json",  # one per work dir: checkpoints are shared
        config_file=work_dir / f"{prefix}strong_config.py",
        model_file=work_dir / f"{prefix}strong_model.json",
        inputs=inputs,
        meta=meta,
        record={"train_sha256": ann_sha, "supervision": supervision, **extra_record},
        model_record={"classes": meta["extra"]["classes"], "supervision": supervision},
        train_without=tr.TEST_KEYS,  # the training Runner builds no test loop
        name=f"{prefix}strong_train",
        write_inputs=write_inputs,
        read_inputs=read_inputs,
    )
    legacy = not (extra or train_props)  # run files without a fingerprint had neither
    legacy_same = lambda rec: legacy and rec.get("train_sha256") == ann_sha  # noqa: E731
    fingerprint = tr.Fingerprint(
        fingerprint_of(tr.FINGERPRINT_VERSION),
        tuple(fingerprint_of(v) for v in tr.LEGACY_VERSIONS),
        legacy_same,
    )
    return job, fingerprint


def _sha_of(obj: Any, keys: Sequence[str] = ("images", "categories", "annotations")) -> str:
    payload = {k: obj[k] for k in keys}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _infer(cfg, ckpt: str, where: tuple, classes: list[str], meta: Mapping, config) -> Path:
    """Detect on one split with ``runner.test()``; ``WSODDumpCocoResults`` writes ``out``
    (``where = (split path, split, out, training file, (its proposals or None, allow_pickle))``)."""
    split_path, split, out, train_file, (split_props, allow_pickle) = where
    test_cfg = tr.detection_config(cfg, f"infer_{Path(split_path).stem}")
    root = resolve_root(split["info"]["data_root"], split_path).resolve()
    ds_cfg = test_cfg.test_dataloader.dataset
    set_coco_dataset(
        ds_cfg, str(config), Path(split_path).resolve(), root, classes, StrongStageError
    )
    inner = inner_dataset(ds_cfg, str(config), StrongStageError)
    inner.test_mode = True
    if split_props is not None:
        props.set_proposals(inner, split_props, allow_pickle)
    tr.detect(
        test_cfg,
        ckpt,
        out,
        {
            "stage": "strong",
            "seed": meta["seed"],
            "config": {"config": str(config), "checkpoint": ckpt},
            "inputs": [str(p) for p in (split_path, split_props, ckpt, train_file) if p],
            "extra": {**meta["extra"], "split": str(split_path)},
        },
        default_evaluator={"type": "WSODDumpCocoResults"},
    )
    return out
