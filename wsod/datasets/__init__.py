"""Datasets: loaders for the data stage, and the mmdet dataset the weak detectors train on.

Loaders (plain python, no torch, no mmdet), each returning a ``base.SplitData`` that
``wsod.stages.data`` writes out:

- ``voc``: VOC2007-style folders (``load_voc_split``, ``parse_voc_xml``, ``voc_box_to_xyxy``);
- ``custom``: a folder of tagged images + CSV, or a COCO json with image labels;
- ``demo``: the deterministic synthetic demo dataset in VOC layout (``ensure_demo_dataset``);
- ``download``: ``fetch_voc07`` (``python -m wsod.datasets.download --dest data``);
- ``base``: ``SplitData``, the shared checks (``image_size`` decodes every image fully).

The loaders read ground-truth boxes, so only the data stage (and evaluation) may import them.

mmdet dataset (imports torch and mmdet; configs bring it in with ``custom_imports``):

- ``weak_dataset``: ``WSODWeakDataset`` + transforms, the training side: it reads a weak-label
  split (no boxes) and its proposals, never a ground-truth file.

This ``__init__`` imports only ``base``, so importing a loader never pulls in torch or mmdet.
"""

from wsod.datasets.base import DatasetError, SplitData

__all__ = ["DatasetError", "SplitData"]
