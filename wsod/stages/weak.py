"""Weak stage: train the black-box weakly supervised detector, or import another one's output.

Inputs:
    * ``config``: an mmdet config of a weak detector (``configs/oicr/*``, ``configs/wsddn/*``);
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

Import mode (``import_file``): validate another detector's detections (COCO results json, VOC
``comp4_det_*`` txt files, PCL ``detections.pkl``; see ``wsod.weak.importers``) against
``split`` and write them as ``out`` (default ``<work_dir>/train_dets.json``).

Invariants: training reads only the split (image labels) and proposals, never a ground-truth
box file; ``resume=True`` continues from the work dir's last checkpoint (rerunning a finished
run only re-infers); multi-GPU training uses mmengine's launcher (``launcher='pytorch'`` under
``torchrun``), the CPU path is what the tests run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod import contracts
from wsod.utils import runner as rn
from wsod.utils.io import write_json_artifact, write_text


class WeakStageError(ValueError):
    """Bad input to the weak stage; the message names the file and the fix."""


InferTriple = tuple[str | os.PathLike, str | os.PathLike, str | os.PathLike | None]


def load_weak_config(config: str | os.PathLike, cfg_options: Mapping | None = None):
    """``Config.fromfile`` + ``--cfg-options``; imports ``wsod.models`` (registries, resume)."""
    import wsod.datasets.weak_dataset  # noqa: F401  (registers the dataset and transforms)

    return rn.load_config(
        config, cfg_options, error=WeakStageError, hint="see configs/oicr/ and configs/wsddn/"
    )


def _data_root(split: Mapping, split_path: str | os.PathLike) -> Path:
    from wsod.contracts import resolve_data_root

    root = resolve_data_root(split, split_path).resolve()
    if not root.is_dir():
        raise WeakStageError(
            f"{split_path}: image folder {root} (info.data_root) not found; "
            "regenerate the split with `wsod data`"
        )
    return root


def _set_dataset(
    ds_cfg: Any,
    split_path: str | os.PathLike,
    split: Mapping,
    proposals: str | os.PathLike | None,
    allow_pickle: bool = False,
) -> None:
    """Point a dataloader's dataset config at a split + its proposals (absolute paths; None:
    one whole-image box per image, for models that train on images alone). ``allow_pickle``:
    the user's ``--allow-pickle`` for a proposal ``.pkl`` without its ``.npz`` twin."""
    while ds_cfg.get("type") in ("RepeatDataset", "ClassBalancedDataset"):
        ds_cfg = ds_cfg.dataset
    if proposals is not None and not (
        Path(proposals).is_file() or Path(proposals).with_suffix(".npz").is_file()
    ):
        raise WeakStageError(
            f"{proposals}: no such proposal file; run `wsod proposals` on {split_path}"
        )
    ds_cfg.ann_file = str(Path(split_path).resolve())
    ds_cfg.data_root = str(_data_root(split, split_path))
    ds_cfg.proposal_file = None if proposals is None else str(Path(proposals).resolve())
    ds_cfg.data_prefix = {"img": ""}
    if allow_pickle:
        ds_cfg.allow_pickle = True


def trains_on_proposals(cfg: Any) -> bool:
    """Whether a weak config's training reads proposals (``train_reads_proposals``, default
    True). The CAM head trains on whole images: its training needs only the split, so `make`
    can train it while the proposals are still being computed."""
    return bool(cfg.get("train_reads_proposals", True))


def _set_num_classes(cfg: Any, num_classes: int) -> None:
    head = cfg.model.get("roi_head") or cfg.model.get("head")
    if head is not None and "num_classes" in head:
        head.num_classes = num_classes


def run(
    config: str | os.PathLike | None,
    work_dir: str | os.PathLike | None,
    *,
    train_split: str | os.PathLike | None = None,
    train_proposals: str | os.PathLike | None = None,
    infer: Sequence[InferTriple] | None = None,
    cfg_options: Mapping | None = None,
    resume: bool = True,
    seed: int = 0,
    import_file: str | os.PathLike | None = None,
    import_format: str | None = None,
    allow_pickle: bool = False,
    max_iters: int | None = None,
    split: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    drop_unmatched: bool = False,
    launcher: str = "none",
) -> dict:
    """Train a weak detector and detect with it, or import foreign detections.

    Args:
        config: weak detector config (e.g. ``configs/oicr/oicr_mobilenetv2_4k_voc07-train_
            voc07-val.py``); unused in import mode.
        work_dir: checkpoints, logs, resolved config, default outputs.
        train_split: weak-label split json to train on (None: no training, infer with the work
            dir's last checkpoint or the config's ``load_from``).
        train_proposals: proposals of ``train_split``; may be None when the config trains on
            whole images (``train_reads_proposals = False``, the CAM head).
        infer: ``(split_json, proposals, out_json)`` triples; ``out_json`` None ->
            ``<work_dir>/<split stem>_dets.json``; ``[]``: train only. Default with
            ``train_split`` and ``train_proposals``: ``[(train_split, train_proposals,
            <work_dir>/train_dets.json)]``.
        cfg_options: dotted-key overrides merged into the config (``--cfg-options``).
        resume: continue from the work dir's last checkpoint when it is from the same run
            (config, seed, training inputs); another run's checkpoints are moved to
            ``<work_dir>/stale/<time>/`` and training starts over.
        seed: mmengine ``randomness.seed``.
        import_file: foreign detections to import instead of training (see
            :mod:`wsod.weak.importers`); needs ``split``.
        import_format: ``coco``, ``voc_txt`` or ``pkl`` (guessed from the path if None).
        allow_pickle: allow unpickling ``import_file`` (``pkl`` format), and proposal ``.pkl``
            files that have no ``.npz`` twin.
        max_iters: override the schedule's iterations (smoke runs, tests).
        split: the split the imported detections are for (import mode).
        out: imported detections output (default ``<work_dir>/train_dets.json``).
        drop_unmatched: import mode: drop detections whose image/class is not in the split.
        launcher: mmengine launcher (``none``; ``pytorch`` under torchrun for multi-GPU).

    Returns:
        ``{"work_dir", "checkpoint", "config", "iterations", "resumed_from", "outputs": {out:
        {"split", "detections", "images_with_detections"}}}``; import mode: ``{"outputs",
        "report"}``.

    Raises:
        WeakStageError: bad inputs (the message names the file and the fix).
    """
    started = time.time()
    if import_file is not None:
        return _import(
            import_file,
            split,
            out,
            work_dir,
            import_format=import_format,
            allow_pickle=allow_pickle,
            drop_unmatched=drop_unmatched,
            started=started,
            seed=seed,
        )
    if config is None or work_dir is None:
        raise WeakStageError("config and work_dir are required (--config, --work-dir)")
    work_dir = Path(work_dir).resolve()
    if train_split is None and train_proposals is not None:
        raise WeakStageError("--train-proposals needs the split they are for (--train-split)")

    triples = _infer_triples(infer, train_split, train_proposals, work_dir)
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

    cfg = load_weak_config(config, cfg_options)
    if train_split is not None and train_proposals is None and trains_on_proposals(cfg):
        raise WeakStageError(
            f"{config}: this detector trains on proposals; give the training split's "
            "(--train-proposals, from `wsod proposals`)"
        )
    if classes is not None:
        _set_num_classes(cfg, len(classes))
    rn.set_runtime(cfg, work_dir, seed, launcher)
    meta = {"stage": "weak", "seed": seed, "started": started}

    resumed_from = None
    iterations = None
    if train is not None:
        _set_dataset(
            cfg.train_dataloader.dataset, train_split, train, train_proposals, allow_pickle
        )
        if max_iters is not None:
            rn.set_max_iters(cfg, max_iters, error=WeakStageError)
        seed_file = cfg.train_dataloader.dataset.get("seed_file")
        if seed_file and not Path(seed_file).is_file():
            raise WeakStageError(
                f"{seed_file}: no such seed file (train_dataloader.dataset.seed_file); give "
                "another weak detector's train_dets.json"
            )
        inputs = [p for p in (train_split, train_proposals, seed_file) if p]
        fingerprint = rn.run_fingerprint(cfg, inputs)
        run_file = work_dir / "weak_run.json"
        resumed_from = None
        if resume:
            legacy = rn.run_fingerprint(cfg, inputs, version=1)
            resumed_from = rn.resume_point(work_dir, run_file, fingerprint, None, legacy)[0]
        rn.set_resume(cfg, resumed_from)
        write_json_artifact(
            run_file, {"fingerprint": fingerprint, "config": str(config)}, inputs=inputs, **meta
        )
        train_cfg = rn.without(cfg, rn.EVAL_KEYS + rn.TEST_KEYS)
        train_cfg.experiment_name = f"weak_train_{time.strftime('%Y%m%d_%H%M%S')}"
        config_out = work_dir / "weak_config.py"
        work_dir.mkdir(parents=True, exist_ok=True)
        write_text(config_out, train_cfg.pretty_text)
        iterations = rn.train(train_cfg)
        ckpt = rn.trained_checkpoint(work_dir, error=WeakStageError)
        write_json_artifact(
            work_dir / "weak_model.json",
            {
                "checkpoint": ckpt,
                "config": str(config_out),
                "iterations": iterations,
                "classes": classes,
                "resumed_from": resumed_from,
            },
            indent=2,
            config=train_cfg.to_dict(),
            inputs=[p for p in (train_split, train_proposals) if p],
            **meta,
        )
    else:
        ckpt = cfg.get("load_from") or rn.latest_checkpoint(work_dir)
        if not ckpt:
            raise WeakStageError(
                f"{work_dir}: no checkpoint to detect with; train first "
                "(--train-split/--train-proposals) or set load_from"
            )
        config_out = work_dir / "weak_config.py"
        if not config_out.is_file():  # inference only: record the config it ran with
            write_text(config_out, rn.without(cfg, rn.TRAIN_KEYS + rn.EVAL_KEYS).pretty_text)

    outputs = {}
    for (split_path, props, out_path), s in zip(triples, infer_splits, strict=True):
        outputs[str(out_path)] = _infer(
            cfg, ckpt, split_path, s, props, out_path, meta, config, allow_pickle
        )
    return {
        "work_dir": str(work_dir),
        "checkpoint": ckpt,
        "config": str(config_out),
        "iterations": iterations,
        "resumed_from": resumed_from,
        "outputs": outputs,
    }


def _infer_triples(infer, train_split, train_proposals, work_dir: Path) -> list[tuple]:
    if infer is None:
        infer = (
            []
            if train_split is None or train_proposals is None
            else [(train_split, train_proposals, work_dir / "train_dets.json")]
        )
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
    test_cfg = rn.without(cfg, rn.TRAIN_KEYS + rn.EVAL_KEYS)
    _set_dataset(test_cfg.test_dataloader.dataset, split_path, split, proposals, allow_pickle)
    test_cfg.test_dataloader.dataset.test_mode = True
    test_cfg.experiment_name = f"weak_infer_{split_path.stem}_{time.strftime('%Y%m%d_%H%M%S')}"
    rn.dump_detections(
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


def _import(
    import_file,
    split,
    out,
    work_dir,
    *,
    import_format: str | None,
    allow_pickle: bool,
    drop_unmatched: bool,
    started: float,
    seed: int,
) -> dict:
    from wsod.weak.importers import import_detections

    if split is None:
        raise WeakStageError("importing detections needs the split they are for (--split)")
    if out is None:
        if work_dir is None:
            raise WeakStageError("give --out (or --work-dir for <work-dir>/train_dets.json)")
        out = Path(work_dir) / "train_dets.json"
    s = contracts.load_split(split)
    dets, report = import_detections(
        import_file,
        s,
        format=import_format,
        allow_pickle=allow_pickle,
        drop_unmatched=drop_unmatched,
    )
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
        },
        inputs=[p for p in (import_file, split) if Path(p).is_file()],
        extra={"import_report": report},
    )
    return {"outputs": {str(out): {"split": str(split), "detections": len(dets)}}, "report": report}
