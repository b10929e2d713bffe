"""Dataset loaders for the data stage (no torch, no mmdet).

- ``voc``: VOC2007-style folders (``load_voc_split``, ``parse_voc_xml``, ``voc_box_to_xyxy``);
- ``custom``: a folder of tagged images + CSV, or a COCO json with image labels;
- ``demo``: the deterministic synthetic demo dataset in VOC layout (``ensure_demo_dataset``);
- ``download``: ``fetch_voc07`` (``python -m wsod.datasets.download --dest data``).

Every loader returns a ``base.SplitData``; ``wsod.stages.data`` writes it out. These loaders
read ground-truth boxes, so only the data stage (and evaluation) may import them.
"""

from wsod.datasets.base import DatasetError, SplitData

__all__ = ["DatasetError", "SplitData"]
