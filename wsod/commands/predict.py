"""``wsod predict``: the trained detector on new images (see :mod:`wsod.stages.predict`)."""

from __future__ import annotations

import argparse
import json

from wsod.commands import parse_cfg_options, run_kwargs
from wsod.utils.options import Option, add_options

HELP = "Run the pipeline's final detector on new images: COCO results json + drawn images."

EXAMPLES = """examples:
  # the VOC pipeline's detector on a folder of images (rescored as the pipeline says)
  wsod predict --pipeline pipelines/voc07_cpu.py --strong-dir work_dirs/voc07_cpu/strong \\
      --weak-dir work_dirs/voc07_cpu/weak --images my_photos/ --out-dir predictions/
  make predict PIPELINE=pipelines/voc07_cpu.py IMAGES=my_photos/   # the same, via make

  # the demo's detector on a glob and a list file (one path a line), no rescoring, on a GPU
  wsod predict --strong-dir work_dirs/demo/strong --images 'data/demo/JPEGImages/00000*.jpg' \\
      list.txt --out-dir predictions/ --device cuda:0 --draw-thr 0.5

outputs in --out-dir: images.json (image id -> file, width, height; a split file without tags),
detections.json (COCO results: image_id, category_id, bbox x y w h in pixels, score) and its
.meta.json, vis/<image> (boxes scoring above --draw-thr with class and score). Unreadable
images are reported by name and skipped.

rescoring: with --pipeline, the output is what the pipeline outputs: when its
rescore_by_black_box is set, the black box (the weak stage's trained model in --weak-dir) runs
on the new images too and each score is multiplied by its confidence in the class for the
image ('image': a CAM black box's class probability on the whole image; 'detections': its
highest detection score of the class, on proposals computed for the new images with the pipeline's
proposal settings). detections.json is then rescored, strong_dets.json holds the detector's own
scores. --no-rescore outputs the detector alone. A black box imported from another codebase
cannot run on new images: predict with --no-rescore.

the strong work dir is a standard mmdet config + checkpoint: strong_model.json names the final
checkpoint (iter_N.pth) and the resolved config (strong_config.py); mmdet's own init_detector
and DetInferencer load them as they are (the config imports wsod's modules through
custom_imports, so run them where wsod is installed), e.g.
  python -c "from mmdet.apis import DetInferencer; DetInferencer(
      'work_dirs/demo/strong/strong_config.py', 'work_dirs/demo/strong/iter_300.pth',
      device='cpu')('img.jpg', out_dir='out/')"
"""

# the pipeline's rescore_by_black_box (normalised) -> the stage's rescore mode
_RESCORE = {"off": None, "detections": "detections", "image": "image"}


OPTIONS = (
    Option(
        "--images",
        nargs="+",
        metavar="PATH",
        help="image files, folders, globs (quote them) or list files (.txt/.lst, a path a line)",
    ),
    Option("--strong-dir", help="the strong stage's work dir (strong_model.json)"),
    Option("--out-dir", help="where images.json, detections.json and vis/ go"),
    Option("--device", help="torch device [cuda:0 when there is a GPU, else cpu]"),
    Option("--draw-thr", type=float, low=0, high=1, help="draw boxes scoring above this [0.3]"),
    Option(
        "--rescore",
        choices=("image", "detections", "1"),
        help="rescore by the black box, as the pipeline's rescore_by_black_box: 'image' (a CAM's "
        "class probability) or 'detections' (= the pipeline's 1: its top detection score) "
        "[the pipeline's rescore_by_black_box; none without it]",
    ),
    Option(
        "--no-rescore",
        dest="rescore",
        action="store_const",
        const="none",
        help="output the detector alone, even when the pipeline rescores",
    ),
    Option("--weak-dir", help="the weak stage's work dir (the black box), for rescoring"),
    Option("--weak-config", help="the weak config [the pipeline's weak.config]"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, OPTIONS)


def rescore_mode(value) -> str | None:
    """The pipeline's ``rescore_by_black_box`` ('off'/'detections'/'image', or the older 0/1)
    as a stage ``rescore`` mode."""
    from wsod.rescoring import black_box_mode

    return _RESCORE[black_box_mode(value)]


def _from_pipeline(args: argparse.Namespace, kwargs: dict) -> None:
    """Rescoring settings from the pipeline file (read by ``wsod.cli``, which keeps it as
    ``args.pipeline_values``): rescore_by_black_box, weak, proposals."""
    pipe = getattr(args, "pipeline_values", None)
    if pipe is None:
        raise ValueError(f"{args.pipeline}: not read; run `wsod predict --pipeline` (wsod.cli)")
    if args.rescore is None:
        kwargs["rescore"] = rescore_mode(pipe.get("rescore_by_black_box"))
    if kwargs.get("rescore"):
        weak = pipe.get("weak") or {}
        kwargs.setdefault("weak_config", weak.get("config"))
        kwargs["weak_cfg_options"] = parse_cfg_options(weak.get("cfg_options"))
        kwargs["proposals"] = pipe.get("proposals") or {}


def run_black_box(split_file, out_dir, mode, weak_dir, *, config, cfg_options, proposals):
    """The black box (the weak stage's model) on the images of ``split_file``: whole-image
    proposals and the CAM's image scores (``mode='image'``, as `make rescore`) or proposals
    with the pipeline's settings (``'detections'``); returns its detections json."""
    import inspect
    from pathlib import Path

    from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS
    from wsod.stages import proposals as proposals_stage
    from wsod.stages import weak as weak_stage

    out_dir = Path(out_dir)
    props = out_dir / "black_box_proposals.pkl"
    options = dict(cfg_options or {})
    if mode == "image":  # the CAM black box as an image classifier
        proposals_stage.run(split_file, props, method="whole_image")
        options.update(IMAGE_SCORES_CFG_OPTIONS)
    else:
        names = set(inspect.signature(proposals_stage.run).parameters) - {"split", "out"}
        settings = {k: v for k, v in (proposals or {}).items() if k in names}
        proposals_stage.run(split_file, props, **settings)
    bb_out = out_dir / "black_box_dets.json"
    weak_stage.run(
        config, weak_dir, infer=[(split_file, props, bb_out)], cfg_options=options or None
    )
    return bb_out


def execute(args: argparse.Namespace) -> int:
    from wsod.stages.predict import run

    if not args.images or not args.strong_dir or not args.out_dir:
        raise ValueError("--images, --strong-dir and --out-dir are required")
    kwargs = run_kwargs(args, OPTIONS, ("images", "out_dir", "strong_dir", "rescore"))
    kwargs["rescore"] = None if args.rescore in (None, "none") else args.rescore
    if kwargs["rescore"] == "1":  # the pipeline's spelling of the detections mode
        kwargs["rescore"] = "detections"
    if getattr(args, "pipeline", None):
        _from_pipeline(args, kwargs)
    if kwargs["rescore"] and not kwargs.get("weak_dir"):
        raise ValueError("rescoring runs the black box: give --weak-dir (or --no-rescore)")
    if kwargs["rescore"]:
        kwargs["black_box"] = run_black_box
    summary = run(args.images, args.out_dir, strong_dir=args.strong_dir, **kwargs)
    print(json.dumps({k: v for k, v in summary.items() if k != "vis"}, default=str))
    return 0
