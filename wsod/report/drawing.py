"""Detections drawn on their images (box, class, score) with mmdet's ``DetLocalVisualizer``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from wsod import contracts
from wsod.utils.progress import progress

# longest side (px) of a drawn image: mmdet's test scale; a 12 MP photo is drawn at this size
# (matplotlib draws every pixel it is given: seconds an image at full size), VOC's as they are
DRAW_SIDE = 1333


def draw_detections(
    split: Mapping, dets: Sequence[Mapping], out_dir: Path, *, draw_thr: float
) -> list[str]:
    """Draw each image's detections scoring above ``draw_thr`` (box, class, score) with
    mmdet's ``DetLocalVisualizer``; writes ``out_dir/<file_name>``, at most :data:`DRAW_SIDE`
    px on its longer side. Returns the written paths."""
    import mmcv
    import torch
    from mmdet.structures import DetDataSample
    from mmdet.visualization import DetLocalVisualizer
    from mmengine.structures import InstanceData

    from wsod.report.plots import shrink_for_drawing

    vis = DetLocalVisualizer(name=f"wsod_predict_{time.time_ns()}")
    vis.dataset_meta = {"classes": contracts.category_names(split), "palette": "random"}
    empty = {"bboxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.ones(0, np.int64)}
    by_image = contracts.detections_by_image(dets)
    root = Path(split["info"]["data_root"])
    written = []
    for im in progress(split["images"], desc="draw", unit="img"):
        d = by_image.get(im["id"], empty)
        image = mmcv.imread(str(root / im["file_name"]), channel_order="rgb")
        image, (layer,) = shrink_for_drawing(image, [d], DRAW_SIDE)
        inst = InstanceData(
            bboxes=torch.as_tensor(layer["bboxes"]),
            scores=torch.as_tensor(d["scores"]),
            labels=torch.as_tensor(d["labels"] - 1),  # category id -> class index
        )
        out = out_dir / im["file_name"]
        vis.add_datasample(
            im["file_name"],
            image,
            DetDataSample(pred_instances=inst),
            draw_gt=False,
            pred_score_thr=draw_thr,
            out_file=str(out),
        )
        written.append(str(out))
    return written
