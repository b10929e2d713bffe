"""Weak stage: train the black-box weakly supervised detector, or import another one's output.

Inputs:
    * ``config``: an mmdet config of a weak detector (``configs/cam/*``; the MIL baselines of
      ``projects/mil_baselines/configs/``);
    * ``train_split``: a weak-label split json (``wsod data``): images + image-level labels,
      **no boxes**; ``train_proposals``: its proposals (``wsod proposals``, mmdet's proposal
      contract .pkl, the .npz twin is preferred), not needed by configs that train on whole
      images (``train_reads_proposals = False``: the CAM head);
    * ``infer``: ``(split_json, proposals_pkl, out_json)`` triples to detect on after training
      (default: the training split itself -> ``<work_dir>/train_dets.json``; ``[]``: train
      only, detect later with ``train_split=None``).

Outputs (in ``work_dir``): mmengine checkpoints and logs, ``weak_config.py`` (the resolved
config), ``weak_model.json`` (checkpoint, iterations, classes), and per inference split a COCO
results json (weak detections contract, category id = class index + 1) with its
``.meta.json``, written atomically by the ``WSODDumpCocoResults`` test evaluator.

Import mode (:func:`import_detections`, ``wsod weak --import``): another detector's detections
(COCO results json, VOC ``comp4_det_*`` txt, PCL ``detections.pkl``) checked against a split,
refused below ``min_coverage`` of its labelled (image, class) pairs, written as above.

Invariants: training reads only the split (image labels) and proposals, never a ground-truth
box file; ``resume=True`` continues from the work dir's last checkpoint when it belongs to the
same run (another run's checkpoints move to ``<work_dir>/stale/<time>/``; a finished run only
re-infers). The flow (config, fingerprint, resume, train, detect) is :mod:`wsod.training`; this
module only wires the split and proposals into the config's datasets
(:mod:`wsod.training.split_dataset`).

Several processes (one code path on CPU and GPU, :mod:`wsod.training.dist`)::

    torchrun --nproc_per_node=2 -m wsod weak --launcher pytorch --config ... --work-dir ...
    srun -p PARTITION --ntasks=8 --ntasks-per-node=8 --gres=gpu:8 \\
        python -m wsod weak --launcher slurm --config ... --work-dir ...

Rank 0 alone writes ``weak_run.json``, ``weak_config.py``, ``weak_model.json`` and moves stale
checkpoints, the other ranks wait for it; detection runs on every rank, each on its shard of
the split, and rank 0 writes the merged detections.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod import contracts
from wsod import training as tr
from wsod.training.split_dataset import set_split_dataset
from wsod.utils.io import write_json_artifact


class WeakStageError(ValueError):
    """Bad input to the weak stage; the message names the file and the fix."""


InferTriple = tuple[str | os.PathLike, str | os.PathLike, str | os.PathLike | None]

CONFIG_HINT = "see configs/cam/ (and projects/mil_baselines/configs/)"
NO_CHECKPOINT_HINT = "train first (--train-split/--train-proposals) or set load_from"


def trains_on_proposals(cfg: Any) -> bool:
    """Whether a weak config's training reads proposals (``train_reads_proposals``, default
    True). The CAM head trains on whole images: its training needs only the split, so `make`
    can train it while the proposals are still being computed."""
    return bool(cfg.get("train_reads_proposals", True))


@dataclasses.dataclass(frozen=True)
class WeakOptions(tr.TrainOptions):
    """The weak stage's options: the training flow's (:class:`wsod.training.TrainOptions`)
    and ``affinity_start_iter``, the first iteration of a two-phase black box's affinity phase
    (None: the config's; refused for a config without one, and a schedule that ends before it
    is refused before anything is written)."""

    affinity_start_iter: int | None = None


def run(
    config: str | os.PathLike,
    work_dir: str | os.PathLike,
    *,
    train_split: str | os.PathLike | None = None,
    train_proposals: str | os.PathLike | None = None,
    infer: Sequence[InferTriple] | None = None,
    options: WeakOptions | None = None,
    **values: Any,
) -> dict:
    """Train a weak detector and detect with it (foreign detections: :func:`import_detections`).

    Args:
        config: weak detector config (``configs/cam/``).
        work_dir: checkpoints, logs, resolved config, default outputs.
        train_split: weak-label split json to train on (None: no training, detect with the
            work dir's last checkpoint or the config's ``load_from``).
        train_proposals: its proposals; None when the config trains on whole images (CAM).
        infer: ``(split_json, proposals, out_json or None)`` triples (None out:
            ``<work_dir>/<split stem>_dets.json``; ``[]``: train only; default: the training
            split and proposals -> ``<work_dir>/train_dets.json``).
        options: the stage's options (:class:`WeakOptions`; default: its defaults).
        values: :class:`WeakOptions` fields by name, replacing those of ``options``
            (``run(..., seed=1, max_iters=50)``).

    Returns:
        ``{"work_dir", "checkpoint", "config", "iterations", "resumed_from", "outputs": {out:
        {"split", "detections", "images_with_detections"}}}``.

    Raises:
        WeakStageError: bad inputs (the message names the file and the fix).
    """
    started = time.time()
    opts = WeakOptions.of(options, values)
    if config is None or work_dir is None:
        raise WeakStageError("config and work_dir are required (--config, --work-dir)")
    work_dir = Path(work_dir).resolve()
    if train_split is None and train_proposals is not None:
        raise WeakStageError("--train-proposals needs the split they are for (--train-split)")
    triples = _infer_triples(infer, train_split, train_proposals, work_dir)
    train, infer_splits, classes = _read_splits(train_split, triples)
    cfg = _prepare(config, opts, work_dir, classes)
    meta = {"stage": "weak", "seed": opts.seed, "started": started}
    if train is not None:
        job = _train_job(cfg, config, work_dir, (train_split, train, train_proposals), opts)
        job.meta, job.model_record = meta, {"classes": classes}
        fingerprint = _fingerprint(cfg, job)
        done = tr.train_or_resume(job, fingerprint, resume=opts.resume, error=WeakStageError)
        ckpt, iterations, resumed_from = done.checkpoint, done.iterations, done.resumed_from
    else:
        config_out, hint = work_dir / "weak_config.py", NO_CHECKPOINT_HINT
        ckpt = tr.detection_checkpoint(cfg, work_dir, config_out, error=WeakStageError, hint=hint)
        iterations = resumed_from = None
    pickle_ok = opts.allow_pickle
    outputs = {
        str(out_path): _infer(cfg, ckpt, split_path, s, props, out_path, meta, config, pickle_ok)
        for (split_path, props, out_path), s in zip(triples, infer_splits, strict=True)
    }
    summary = {"work_dir": str(work_dir), "checkpoint": ckpt}
    summary.update(config=str(work_dir / "weak_config.py"), iterations=iterations)
    return {**summary, "resumed_from": resumed_from, "outputs": outputs}


def _prepare(config, opts: WeakOptions, work_dir: Path, classes):
    """Step 1 of the flow, with the weak dataset and transforms registered;
    ``opts.affinity_start_iter`` sets the start of a two-phase black box's affinity phase
    (refused for a config without one; a schedule that ends before it is refused in
    :func:`_train_job`, before anything is written)."""
    import wsod.datasets.weak_dataset  # noqa: F401  (registers the dataset and transforms)

    cfg = tr.prepare_config(
        config,
        opts,
        work_dir=work_dir,
        num_classes=None if classes is None else len(classes),
        error=WeakStageError,
        hint=CONFIG_HINT,
    )
    if opts.affinity_start_iter is not None:
        _set_phase_start(cfg, opts.affinity_start_iter, config)
    return cfg


def _set_phase_start(cfg, start_iter: int, config) -> None:
    from wsod.models.affinity_phase_hook import set_phase_start

    try:
        set_phase_start(cfg, start_iter, config)
    except ValueError as e:
        raise WeakStageError(str(e)) from None


def check_schedule(cfg, config, affinity_start_iter: int | None = None) -> None:
    """The weak stage's schedule rule on a config with its ``max_iters`` applied (checked by
    the stage before training and by the pipeline check): ``affinity_start_iter`` (if given)
    starts a two-phase black box's affinity phase; a schedule that ends before that phase while
    detection walks on the branch is refused (:class:`WeakStageError`, naming the fix)."""
    from wsod.models.affinity_phase_hook import schedule_error

    if affinity_start_iter is not None:
        _set_phase_start(cfg, affinity_start_iter, config)
    if (why := schedule_error(cfg)) is not None:
        raise WeakStageError(f"{config}: {why}")


def _read_splits(train_split, triples) -> tuple[dict | None, list[dict], list[str] | None]:
    """The training split, the inference splits and their (common) classes."""
    train = contracts.load_split(train_split) if train_split is not None else None
    classes = contracts.category_names(train) if train is not None else None
    infer_splits = []
    for split_path, _, _ in triples:
        s = contracts.load_split(split_path)
        if classes is not None and contracts.category_names(s) != classes:
            raise WeakStageError(
                f"{split_path}: classes {contracts.category_names(s)} differ "
                f"from the training split's {classes}"
            )
        infer_splits.append(s)
    if classes is None and infer_splits:
        classes = contracts.category_names(infer_splits[0])
    return train, infer_splits, classes


def _train_job(cfg, config, work_dir: Path, training: tuple, opts: WeakOptions) -> tr.TrainJob:
    """The weak stage's training wiring: ``training = (split path, split, proposals or None)``
    as the training dataset, the schedule's length, the optional seed file."""
    train_split, train, train_proposals = training
    if train_proposals is None and trains_on_proposals(cfg):
        raise WeakStageError(
            f"{config}: this detector trains on proposals; give the training split's "
            "(--train-proposals, from `wsod proposals`)"
        )
    ds_cfg, pickle_ok = cfg.train_dataloader.dataset, opts.allow_pickle
    set_split_dataset(ds_cfg, train_split, train, train_proposals, pickle_ok, WeakStageError)
    if opts.max_iters is not None:
        tr.set_max_iters(cfg, opts.max_iters, error=WeakStageError)
    check_schedule(cfg, config)
    seed_file = cfg.train_dataloader.dataset.get("seed_file")
    if seed_file and not Path(seed_file).is_file():
        raise WeakStageError(
            f"{seed_file}: no such seed file (train_dataloader.dataset.seed_file); give "
            "another weak detector's train_dets.json"
        )
    return tr.TrainJob(
        stage="weak",
        cfg=cfg,
        config=config,
        work_dir=work_dir,
        run_file=work_dir / "weak_run.json",
        config_file=work_dir / "weak_config.py",
        model_file=work_dir / "weak_model.json",
        inputs=[p for p in (train_split, train_proposals, seed_file) if p],
        name="weak_train",
    )


def _fingerprint(cfg, job: tr.TrainJob) -> tr.Fingerprint:
    old = tuple(tr.run_fingerprint(cfg, job.inputs, version=v) for v in tr.LEGACY_VERSIONS)
    return tr.Fingerprint(tr.run_fingerprint(cfg, job.inputs), legacy=old)


def _infer_triples(infer, train_split, train_proposals, work_dir: Path) -> list[tuple]:
    if infer is None:  # default: the training split, when it has proposals
        default = [(train_split, train_proposals, work_dir / "train_dets.json")]
        infer = [] if train_split is None or train_proposals is None else default
    triples = []
    for item in infer:
        parts = list(item)
        if len(parts) == 2:
            parts.append(None)
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise WeakStageError(f"infer entry {item!r}: want (split_json, proposals, out_json)")
        split_path, props, out_path = parts
        out_path = Path(out_path) if out_path else work_dir / f"{Path(split_path).stem}_dets.json"
        triples.append((Path(split_path), Path(props), out_path.resolve()))
    return triples


def _infer(
    cfg: Any,
    ckpt: str,
    split_path: Path,
    split: Mapping,
    proposals: Path,
    out: Path,
    meta: Mapping,
    config: Any,
    allow_pickle: bool = False,
) -> dict:
    """Detect on one split with ``runner.test()``; ``WSODDumpCocoResults`` writes ``out``."""
    test_cfg = tr.detection_config(cfg, f"weak_infer_{split_path.stem}")
    ds_cfg = test_cfg.test_dataloader.dataset
    set_split_dataset(ds_cfg, split_path, split, proposals, allow_pickle, WeakStageError)
    test_cfg.test_dataloader.dataset.test_mode = True
    tr.detect(
        test_cfg,
        ckpt,
        out,
        {
            "stage": "weak",
            "seed": meta["seed"],
            "config": {"config": str(config), "checkpoint": ckpt},
            "inputs": [str(split_path), str(proposals), ckpt],
            "extra": {"split": str(split_path), "classes": contracts.category_names(split)},
        },
        default_evaluator={"type": "WSODDumpCocoResults", "max_per_image": 100},
    )
    dets = contracts.load_detections(out, split)
    return {
        "split": str(split_path),
        "detections": len(dets),
        "images_with_detections": len({d["image_id"] for d in dets}),
    }


def import_detections(
    import_file: str | os.PathLike,
    split: str | os.PathLike | None,
    out: str | os.PathLike | None = None,
    *,
    work_dir: str | os.PathLike | None = None,
    import_format: str | None = None,
    allow_pickle: bool = False,
    drop_unmatched: bool = False,
    min_coverage: float | None = None,
    seed: int = 0,
) -> dict:
    """Import mode (``wsod weak --import``): another detector's detections for ``split``,
    validated and written as the weak stage's detections.

    Args:
        import_file: COCO results json, VOC ``comp4_det_*`` txt folder/glob or PCL
            ``detections.pkl`` (:func:`wsod.detections.importers.import_detections`).
        split: the weak-label split json the detections are for.
        out: where to write them (default ``<work_dir>/train_dets.json``).
        work_dir: the weak stage's work dir, for the default ``out``.
        import_format, allow_pickle, drop_unmatched, min_coverage: the importer's (format
            guessed from the path when None; ``allow_pickle`` for a ``.pkl``; drop what does
            not match the split instead of failing; the share of the split's labelled (image,
            class) pairs an import must cover, default 0.9).
        seed: recorded in the output's provenance, as for trained detections.

    Returns:
        ``{"outputs": {out: {"split", "detections"}}, "report": the importer's report}``.

    Raises:
        WeakStageError: no split, or neither ``out`` nor ``work_dir``.
    """
    from wsod.detections import importers

    started = time.time()
    if split is None:
        raise WeakStageError("importing detections needs the split they are for (--split)")
    if out is None:
        if work_dir is None:
            raise WeakStageError("give --out (or --work-dir for <work-dir>/train_dets.json)")
        out = Path(work_dir) / "train_dets.json"
    options = {"format": import_format, "allow_pickle": allow_pickle}
    options.update(drop_unmatched=drop_unmatched, min_coverage=min_coverage)
    dets, report = importers.import_detections(import_file, contracts.load_split(split), **options)
    write_json_artifact(
        out,
        dets,
        stage="weak",
        seed=seed,
        started=started,
        config={
            "import_file": str(import_file),
            "format": report["format"],
            "drop_unmatched": drop_unmatched,
            "min_coverage": report["min_coverage"],
        },
        inputs=[p for p in (import_file, split) if Path(p).is_file()],
        extra={"import_report": report},
    )
    return {"outputs": {str(out): {"split": str(split), "detections": len(dets)}}, "report": report}
