"""``WSODDumpCocoResults``: an mmengine metric that writes predictions as COCO results json.

Used as ``test_evaluator`` by the weak and strong stages so that inference is a plain
``runner.test()``. Category ids: our splits number categories 1..K in class order
(``wsod.contracts``), so a model's label index ``i`` is category id ``i + 1``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from mmdet.registry import METRICS
from mmengine.evaluator import BaseMetric

from wsod.contracts import make_detections
from wsod.utils.io import write_json_artifact


@METRICS.register_module()
class WSODDumpCocoResults(BaseMetric):
    """Collect ``pred_instances`` of every image and write them to ``out_file``.

    Args:
        out_file: COCO results json (``image_id, category_id, bbox`` xywh, ``score``).
        score_thr: drop predictions below this score.
        max_per_image: keep at most this many (highest-scoring) predictions per image.
        meta: extra provenance for the ``.meta.json`` sidecar (config, inputs, seed).
    """

    default_prefix = "dump"

    def __init__(
        self,
        out_file: str,
        score_thr: float = 0.0,
        max_per_image: int = 300,
        meta: dict | None = None,
        collect_device: str = "cpu",
        prefix: str | None = None,
    ):
        super().__init__(collect_device=collect_device, prefix=prefix)
        self.out_file = out_file
        self.score_thr = score_thr
        self.max_per_image = max_per_image
        self.meta = dict(meta or {})
        self._started = time.time()

    def process(self, data_batch, data_samples: Sequence[dict]) -> None:
        for sample in data_samples:
            pred = sample["pred_instances"]
            boxes = pred["bboxes"].detach().cpu().numpy().astype(np.float64)
            scores = pred["scores"].detach().cpu().numpy().astype(np.float64)
            labels = pred["labels"].detach().cpu().numpy().astype(np.int64)
            keep = np.flatnonzero(scores >= self.score_thr)
            keep = keep[np.argsort(-scores[keep], kind="stable")][: self.max_per_image]
            # one entry per image: mmengine trims ``results`` to the dataset length
            self.results.append(
                make_detections(sample["img_id"], boxes[keep], scores[keep], labels[keep] + 1)
            )

    def compute_metrics(self, results: list) -> dict:
        results = [d for per_image in results for d in per_image]
        meta = {"stage": "inference", **self.meta}
        meta.setdefault("started", self._started)
        write_json_artifact(self.out_file, results, **meta)
        n_img = len({r["image_id"] for r in results})
        return {"num_detections": len(results), "num_images_with_detections": n_img}
