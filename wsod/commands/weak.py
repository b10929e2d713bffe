"""``wsod weak``: train the weakly supervised detector (the CAM black box) and detect with it, or
import another detector's detections (see :mod:`wsod.stages.weak`)."""

from __future__ import annotations

import argparse
import json

from wsod.commands import (
    config_options,
    launcher_option,
    parse_cfg_options,  # noqa: F401  (re-exported: wsod.commands.weak.parse_cfg_options)
    precision_option,
    resume_option,
    run_kwargs,
    training_kwargs,
)
from wsod.utils.options import Option, add_options

HELP = (
    "Train the black-box weak detector (a CAM, or a project's head, scoring proposals; image labels "
    "only) and write its detections, or import another detector's detections."
)

EXAMPLES = """examples:
  # CPU: OICR on MobileNetV2 (projects/mil_baselines), detections on train (default) and val;
  # rerun to resume
  wsod weak --config projects/mil_baselines/configs/oicr/oicr_mobilenetv2_4k_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak \\
      --train-split work_dirs/voc07/data/train.json \\
      --train-proposals work_dirs/voc07/proposals/train.pkl \\
      --infer work_dirs/voc07/data/train.json:work_dirs/voc07/proposals/train.pkl:work_dirs/voc07/weak/train_dets.json \\
      --infer work_dirs/voc07/data/val.json:work_dirs/voc07/proposals/val.pkl:work_dirs/voc07/weak/val_dets.json

  # the CAM trains on whole images (no proposals needed), then detects once proposals exist
  wsod weak --config configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak --train-split work_dirs/voc07/data/train.json
  wsod weak --config configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak \\
      --infer work_dirs/voc07/data/train.json:work_dirs/voc07/proposals/train.pkl

  # the demo dataset, a 50-step smoke run
  wsod weak --config configs/cam/cam_mobilenetv2_demo.py --work-dir work_dirs/demo/weak \\
      --train-split work_dirs/demo/data/train.json --max-iters 50

  # a 50-step smoke run of the two-phase CAM black box: 40 classifier steps, then 10 of its
  # affinity branch (a schedule that ends before the branch's phase is refused at once)
  wsod weak --config configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py \\
      --work-dir work_dirs/demo/weak --train-split work_dirs/demo/data/train.json \\
      --max-iters 50 --affinity-start-iter 40

  # detect again with a finished work dir (no training) and test-time augmentation:
  # class scores averaged over flipped and rescaled views before NMS
  wsod weak --config configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak \\
      --infer work_dirs/voc07/data/val.json:work_dirs/voc07/proposals/val.pkl \\
      --cfg-options +model.test_cfg.flip=True "+model.test_cfg.scales=[0.75,1.0,1.25]"

  # GPUs (GPUS=4): the pipeline's black box through mmengine's launcher
  torchrun --nproc_per_node=4 -m wsod weak --launcher pytorch \\
      --config configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak --train-split work_dirs/voc07/data/train.json

  # the same on a slurm cluster (8 GPUs, one task per GPU); CPUs: torchrun ... --launcher pytorch
  srun -p PARTITION --ntasks=8 --ntasks-per-node=8 --gres=gpu:8 python -m wsod weak --launcher slurm \\
      --config configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py \\
      --work-dir work_dirs/voc07/weak --train-split work_dirs/voc07/data/train.json

  # use another detector as the black box: check and convert its output
  wsod weak --import results/comp4_det_train_*.txt --import-format voc_txt \\
      --split work_dirs/voc07/data/train.json --out work_dirs/voc07/weak/train_dets.json
  wsod weak --import pcl/detections.pkl --allow-pickle \\
      --split work_dirs/voc07/data/train.json --out work_dirs/voc07/weak/train_dets.json

--infer takes SPLIT:PROPOSALS[:OUT] (OUT defaults to <work-dir>/<split stem>_dets.json).
Import formats: coco (results json), voc_txt (folder/glob of comp4_det_<split>_<class>.txt,
1-based 'image_id score x1 y1 x2 y2' lines), pkl (PCL/py-faster-rcnn all_boxes; needs
--allow-pickle). Every image id / class that does not match the split is listed; the import
fails unless --drop-unmatched. An import must cover the split: below --min-coverage (default
0.9) of its labelled (image, class) pairs with a detection it fails, naming the classes and
counting the images without one.
--cfg-options: keys must exist in the resolved config (a typo is refused with near matches);
+KEY=VALUE adds a key the config does not have (e.g. +model.test_cfg.flip=True).
"""


# the --help group of the import mode's options
IMPORT = "import another detector's detections (instead of training)"

OPTIONS = (
    Option("--config", help="weak detector config (configs/cam; projects/mil_baselines/configs)"),
    Option("--work-dir", help="checkpoints, logs, resolved config, default outputs"),
    Option("--train-split", metavar="SPLIT_JSON", help="weak-label split to train on"),
    Option("--train-proposals", metavar="PKL", help="proposals of the training split"),
    Option(
        "--infer",
        action="append",
        metavar="SPLIT:PROPOSALS[:OUT]",
        help="detect on a split after training (repeatable) [the training split -> "
        "<work-dir>/train_dets.json]",
    ),
    Option(
        "--no-infer",
        action="store_true",
        help="train only (detect later: the same command without --train-split, with --infer)",
        default=False,
    ),
    *config_options("train_dataloader.batch_size=1"),
    Option(
        "--affinity-start-iter",
        type=int,
        low=0,
        metavar="N",
        help="first iteration of the affinity phase of a two-phase CAM black box (its "
        "WSODAffinityPhaseHook, wherever it stands in custom_hooks); below --max-iters, e.g. "
        "4/5 of it [the config's]",
    ),
    resume_option(),
    launcher_option(),
    precision_option(),
    Option(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="COCO results json, VOC comp4_det txt folder/glob, or detections.pkl",
        group=IMPORT,
    ),
    Option(
        "--import-format",
        choices=("coco", "voc_txt", "pkl"),
        help="format of --import [guessed from the path]",
        group=IMPORT,
    ),
    Option(
        "--allow-pickle",
        action="store_const",
        const=True,
        help="allow unpickling --import (pkl format) and a --train-proposals/--infer .pkl "
        "that has no .npz twin (unpickling runs code in the file: trusted files only)",
        group=IMPORT,
    ),
    Option(
        "--drop-unmatched",
        action="store_const",
        const=True,
        help="drop detections whose image or class is not in --split",
        group=IMPORT,
    ),
    Option(
        "--split",
        metavar="SPLIT_JSON",
        help="the split the imported detections are for",
        group=IMPORT,
    ),
    Option(
        "--out",
        metavar="JSON",
        help="imported detections [<work-dir>/train_dets.json]",
        group=IMPORT,
    ),
    Option(
        "--min-coverage",
        type=float,
        low=0,
        high=1,
        metavar="SHARE",
        help="refuse an import with a detection for less than this share of the split's "
        "labelled (image, class) pairs; 0 accepts any [0.9]",
        group=IMPORT,
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def check_config(cfg, config: str, section: dict) -> None:
    """The pipeline check's look at this stage's config (``cfg``, loaded from ``config`` with
    the ``section``'s ``cfg_options`` and ``max_iters`` applied): the black box's phases fit
    its schedule, ``affinity_start_iter`` applied (:func:`wsod.stages.weak.check_schedule`)."""
    from wsod.stages.weak import check_schedule

    check_schedule(cfg, config, section.get("affinity_start_iter"))


def parse_infer(items) -> list[tuple[str, str, str | None]]:
    """``["SPLIT:PROPS:OUT", "SPLIT:PROPS", [split, props, out]]`` -> triples."""
    triples = []
    for item in items or []:
        parts = item.split(":") if isinstance(item, str) else [str(x) for x in item]
        if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
            raise ValueError(f"--infer {item!r}: want SPLIT:PROPOSALS or SPLIT:PROPOSALS:OUT")
        triples.append((parts[0], parts[1], parts[2] if len(parts) == 3 and parts[2] else None))
    return triples


# options of training and detection that import mode would ignore: refused with --import
_TRAIN_ONLY = ("train_split", "train_proposals", "infer", "no_infer")


def execute(args: argparse.Namespace) -> int:
    import inspect

    from wsod.stages import weak

    if args.import_file:  # import mode: the options of weak.import_detections
        stray = [f"--{n.replace('_', '-')}" for n in _TRAIN_ONLY if getattr(args, n, None)]
        if stray:
            raise ValueError(
                f"--import reads another detector's detections; {', '.join(stray)} train or "
                "detect with this project's black box and would be ignored: drop them, or drop "
                "--import"
            )
        names = inspect.signature(weak.import_detections).parameters
        given = run_kwargs(args, OPTIONS)
        summary = weak.import_detections(**{n: v for n, v in given.items() if n in names})
        print(json.dumps(summary, default=str))
        return 0
    if not args.config or not args.work_dir:
        raise ValueError("--config and --work-dir are required (or --import FILE --split S)")
    import_only = set(inspect.signature(weak.import_detections).parameters)
    import_only -= {"work_dir", *weak.WeakOptions.names()}
    passed = ("config", "work_dir", "no_infer", *import_only)  # no_infer: handled here
    kwargs = training_kwargs(args, OPTIONS, passed, parse_infer, weak.WeakOptions)
    if getattr(args, "no_infer", False):
        if kwargs.get("infer"):
            raise ValueError("--no-infer and --infer contradict each other; give one")
        kwargs["infer"] = []
    summary = weak.run(args.config, args.work_dir, **kwargs)
    print(json.dumps(summary, default=str))
    return 0
