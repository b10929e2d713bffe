"""``wsod strong``: train an mmdetection detector on pseudo labels and detect with it (see
:mod:`wsod.stages.strong`)."""

from __future__ import annotations

import argparse
import json

from wsod.commands import (
    config_options,
    launcher_option,
    parse_cfg_options,  # noqa: F401  (re-exported: wsod.commands.strong.parse_cfg_options)
    precision_option,
    resume_option,
    training_kwargs,
)
from wsod.utils.options import Option, add_options

HELP = "Train an mmdetection detector (Faster R-CNN by default) on pseudo labels, then detect."

EXAMPLES = """examples:
  # CPU: MobileNetV2 Faster R-CNN on VOC07 pseudo labels, detect on val (rerun to resume)
  wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py \\
      --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \\
      --infer work_dirs/voc07/data/val.json:work_dirs/voc07/strong/val_dets.json

  # the pipeline's config (background loss 0.3); also re-label the train split (a
  # self-training round); a GPU takes larger batches
  wsod strong --config configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py \\
      --pseudo-labels work_dirs/voc07/denoise/pseudo_train.json --work-dir work_dirs/voc07/strong \\
      --infer work_dirs/voc07/data/val.json --infer work_dirs/voc07/data/train.json \\
      --cfg-options train_dataloader.batch_size=4 optim_wrapper.optimizer.lr=0.005

  # fully supervised reference (REAL boxes; an upper bound): outputs default to fsd_*.json
  wsod strong --config configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py \\
      --fully-supervised-gt work_dirs/demo/data/train_gt.json --work-dir work_dirs/demo/fsd \\
      --infer work_dirs/demo/data/val.json

  # Fast R-CNN on the pipeline's selective-search proposals (no RPN: reads_proposals = True)
  wsod strong --config projects/fast_rcnn/configs/fast-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py \\
      --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json --work-dir work_dirs/voc07_cpu/strong \\
      --train-proposals work_dirs/voc07_cpu/proposals/train.pkl \\
      --infer work_dirs/voc07_cpu/data/val.json:work_dirs/voc07_cpu/proposals/val.pkl:work_dirs/voc07_cpu/strong/val_dets.json

  # the backbone from the black box's trunk (Lite0 CAM -> Lite0 Faster R-CNN), bf16 autocast
  wsod strong --config configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py \\
      --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json --work-dir work_dirs/voc07_cpu/strong \\
      --init-backbone work_dirs/voc07_cpu/weak/weak_model.json --precision bf16

  # several processes: torchrun (CPU: gloo, GPU: nccl) or srun on a slurm cluster (GPUs)
  torchrun --nproc_per_node=2 -m wsod strong --launcher pytorch --config ... --work-dir ...
  srun -p PARTITION --ntasks=8 --ntasks-per-node=8 --gres=gpu:8 \\
      python -m wsod strong --launcher slurm --config ... --work-dir ...
  (rank 0 alone writes the artifacts; detection is sharded over the ranks)

--cfg-options: keys must exist in the resolved config (a typo is refused with near matches);
+KEY=VALUE adds a key the config does not have.
"""


OPTIONS = (
    Option("--config", help="mmdet config (configs/faster_rcnn/*.py)"),
    Option("--pseudo-labels", help="pseudo-label COCO json from `wsod denoise`"),
    Option(
        "--fully-supervised-gt",
        metavar="TRAIN_BOXES_JSON",
        help="train on these REAL boxes instead of pseudo labels: the fully "
        "supervised reference (an upper bound); outputs default to fsd_*",
    ),
    Option("--work-dir", help="checkpoints, logs, resolved config, default outputs"),
    Option(
        "--infer",
        action="append",
        metavar="SPLIT[:PROPOSALS][:OUT]",
        help="detect on a split json after training; OUT defaults to "
        "<work-dir>/[fsd_]<split>_dets.json; PROPOSALS (.pkl/.npz, `wsod proposals`) only "
        "for a config that reads them (reads_proposals = True) (repeatable)",
    ),
    Option(
        "--train-proposals",
        metavar="PKL",
        help="the training images' proposals (`wsod proposals`), for a config that reads "
        "them instead of an RPN (reads_proposals = True: projects/fast_rcnn/configs/); part of the run",
    ),
    Option(
        "--allow-pickle",
        action="store_const",
        const=True,
        help="allow a --train-proposals/--infer .pkl that has no .npz twin (unpickling runs "
        "code in the file: trusted files only)",
    ),
    *config_options("train_cfg.max_iters=100"),
    Option("--data-root", help="image folder [the training file's info.data_root]"),
    Option(
        "--train-split",
        metavar="TRAIN_SPLIT_JSON",
        help="weak-label split of the training images (their image-level labels), for a "
        "config whose strong_inputs plug-in reads them (projects/soft_teacher/configs/) "
        "[the training file's info.split_file]",
    ),
    Option(
        "--init-backbone",
        metavar="WEAK_MODEL_JSON",
        help="start the backbone from the black box's trained trunk (its weak_model.json; "
        "same backbone type as the config, e.g. a Lite0 CAM and a faster-rcnn_efficientnet-"
        "lite0 config) instead of ImageNet; image labels only, as the black box saw",
    ),
    resume_option(),
    launcher_option(),
    precision_option(),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


PROPOSAL_SUFFIXES = (".pkl", ".npz")


def parse_infer(items) -> list[tuple[str, str | None, str | None]]:
    """``["SPLIT", "SPLIT:OUT", "SPLIT:PROPOSALS", "SPLIT:PROPOSALS:OUT", [split, out],
    [split, proposals, out]]`` -> ``[(split, proposals or None, out or None), ...]``. A
    two-part entry whose second part ends in ``.pkl``/``.npz`` names proposals (detections are
    json); ``SPLIT::OUT`` and ``SPLIT:PROPOSALS:`` leave a part out."""
    triples = []
    for item in items or []:
        parts = item.split(":") if isinstance(item, str) else [str(x) for x in item]
        if len(parts) > 3 or not parts[0]:
            raise ValueError(
                f"--infer {item!r}: want SPLIT, SPLIT:OUT, SPLIT:PROPOSALS or SPLIT:PROPOSALS:OUT"
            )
        if len(parts) == 2:
            is_props = parts[1].endswith(PROPOSAL_SUFFIXES)
            parts = [parts[0], parts[1], ""] if is_props else [parts[0], "", parts[1]]
        split, props, out = (parts + ["", ""])[:3]
        triples.append((split, props or None, out or None))
    return triples


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.strong import StrongOptions, run

    if not args.config or not args.work_dir:
        raise ValueError("--config and --work-dir are required (or give them in --pipeline)")
    if not args.pseudo_labels and not args.fully_supervised_gt:
        raise ValueError("give --pseudo-labels (or --fully-supervised-gt for the reference)")
    passed = ("config", "pseudo_labels", "work_dir")
    kwargs = training_kwargs(args, OPTIONS, passed, parse_infer, StrongOptions)
    summary = run(args.config, args.pseudo_labels, args.work_dir, **kwargs)
    print(json.dumps(summary, default=str))
    return 0
