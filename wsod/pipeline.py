"""Pipeline files: one small mmengine-``Config`` python file per experiment.

A pipeline names which configs and parameters each stage uses, one dict per stage::

    run_name = 'demo'
    data = dict(source='data/demo', format='voc', splits=['train', 'val'])
    proposals = dict(method='selective_search', max_boxes=500)
    weak = dict(config='configs/wsddn/...py')
    denoise = dict(strategies=[dict(type='label_consistency'), dict(type='top1')])
    strong = dict(config='configs/faster_rcnn/...py')

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


def get_value(path: str | os.PathLike, key: str, default: str = "") -> str:
    """A dotted key of a pipeline file as text (for the Makefile), e.g. ``weak.config``."""
    node: object = load_pipeline(path)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return str(node)


if __name__ == "__main__":  # python -m wsod.pipeline FILE KEY=DEFAULT ... (for the Makefile)
    import sys

    if len(sys.argv) < 3:
        sys.exit("usage: python -m wsod.pipeline PIPELINE_FILE DOTTED.KEY=DEFAULT ...")
    print(" ".join(get_value(sys.argv[1], *arg.split("=", 1)) for arg in sys.argv[2:]))
