"""Pipeline files: one small mmengine-``Config`` python file per experiment.

A pipeline names which configs and parameters each stage uses, one dict per stage::

    run_name = 'demo'
    data = dict(source='data/demo', format='voc', splits=['train', 'val'])
    proposals = dict(method='selective_search', max_boxes=500)
    weak = dict(config='configs/wsddn/...py')
    denoise = dict(strategies=[dict(type='label_consistency'), dict(type='top1')])
    strong = dict(config='configs/faster_rcnn/...py')
    fsd = 1  # also train the fully supervised reference on the real boxes
    fsd_config = 'configs/faster_rcnn/...py'  # optional; default: strong's config
    rescore_by_black_box = 1  # also evaluate strong/fsd rescored by the black box (wsod rescore);
                              # 'image': by a CAM black box's class probabilities

Keys of a stage's dict are the long option names of ``wsod <stage>`` (dashes as underscores).
"""

from __future__ import annotations

import os
from pathlib import Path


def load_pipeline(path: str | os.PathLike) -> dict:
    from mmengine.config import Config

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such pipeline file (see pipelines/ for examples)")
    return Config.fromfile(str(path)).to_dict()


def weak_trains_on_proposals(pipeline: dict) -> bool:
    """Whether the pipeline's weak config trains on proposals (its ``train_reads_proposals``,
    default True; False for the CAM head). Read without importing the model code."""
    from mmengine.config import Config

    from wsod.stages.weak import trains_on_proposals

    config = (pipeline.get("weak") or {}).get("config")
    if not config or not Path(config).is_file():
        return True
    return trains_on_proposals(Config.fromfile(str(config), import_custom_modules=False))


# values computed from the pipeline rather than read from it
DERIVED = {"weak.train_reads_proposals": weak_trains_on_proposals}


def get_value(path: str | os.PathLike, key: str, default: str = "") -> str:
    """A dotted key of a pipeline file as text (for the Makefile), e.g. ``weak.config``; or a
    value derived from it (:data:`DERIVED`, e.g. ``weak.train_reads_proposals``)."""
    if key in DERIVED:
        return str(int(DERIVED[key](load_pipeline(path))))
    node: object = load_pipeline(path)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return str(node)


STAMPED_SECTIONS = (
    "data",
    "proposals",
    "weak",
    "denoise",
    "strong",
    "fsd_config",
    "rescore_by_black_box",
    "evaluate",
    "report",
)


def write_section_stamps(path: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    """Write ``<out_dir>/<section>.json`` for each stage section, only where its content changed.

    Make rules depend on these stamps instead of the pipeline file, so editing one stage's
    settings reruns that stage and what follows it, not the stages before it. A section the
    pipeline does not have is stamped as ``null``.

    Returns:
        The stamps that were (re)written.
    """
    import json

    pipeline = load_pipeline(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in STAMPED_SECTIONS:
        text = json.dumps(pipeline.get(name), sort_keys=True, indent=1, default=str) + "\n"
        stamp = out / f"{name}.json"
        if not stamp.is_file() or stamp.read_text() != text:
            tmp = stamp.with_suffix(".json.tmp")
            tmp.write_text(text)
            tmp.replace(stamp)
            written.append(stamp)
    return written


if __name__ == "__main__":  # python -m wsod.pipeline FILE [--stamps DIR] KEY=DEFAULT ...
    import sys

    args = sys.argv[1:]
    if len(args) >= 3 and args[1] == "--stamps":
        write_section_stamps(args[0], args[2])
        args = [args[0], *args[3:]]
    if len(args) < 2:
        sys.exit(
            "usage: python -m wsod.pipeline PIPELINE_FILE [--stamps DIR] DOTTED.KEY=DEFAULT ..."
        )
    print(" ".join(get_value(args[0], *arg.split("=", 1)) for arg in args[1:]))
