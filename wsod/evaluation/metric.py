"""``WSODVOCMetric``: an mmengine metric (registered in mmdet's ``METRICS``) that validates with
our VOC math (:mod:`wsod.evaluation.voc`), so mmdet runners and ``wsod evaluate`` agree.

Use in a config (bring the module in with ``custom_imports``)::

    custom_imports = dict(imports=['wsod.evaluation.metric'], allow_failed_imports=False)
    val_evaluator = dict(type='WSODVOCMetric', iou_thr=0.5, eval_mode='11points')

Differences from mmdet's ``VOCMetric``: boxes are 0-based continuous (no ``+1``; ``VOCMetric``
calls ``eval_map(..., use_legacy_coordinate=True)``), both AP modes are always computed and
logged (``eval_mode`` only picks which one is reported as ``mAP``), and a class without GT boxes
is left out of the mean (as ``eval_map``). GT boxes come from ``gt_instances``; boxes in
``ignored_instances`` (difficult / crowd) are ignored, neither TP nor FP. Labels are mmdet's
0-based class indices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mmdet.registry import METRICS
from mmengine.evaluator import BaseMetric
from mmengine.logging import MMLogger

from wsod.evaluation.voc import AP_MODES, eval_voc


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


@METRICS.register_module()
class WSODVOCMetric(BaseMetric):
    """VOC mAP at one IoU threshold, 11-point and area.

    Args:
        iou_thr: IoU threshold of a match (inclusive).
        eval_mode: AP reported as ``mAP`` (``'11points'``, VOC07, or ``'area'``).
        collect_device: ``'cpu'`` or ``'gpu'`` (mmengine).
        prefix: metric name prefix (default ``wsod_voc``).
    """

    default_prefix: str | None = "wsod_voc"

    def __init__(
        self,
        iou_thr: float = 0.5,
        eval_mode: str = "11points",
        collect_device: str = "cpu",
        prefix: str | None = None,
    ) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        if eval_mode not in AP_MODES:
            raise ValueError(f"eval_mode must be one of {AP_MODES}, got {eval_mode!r}")
        self.iou_thr = float(iou_thr)
        self.eval_mode = eval_mode

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Keep per image: GT (boxes, labels, ignored boxes) and predictions, as numpy."""
        for sample in data_samples:
            gt = sample["gt_instances"]
            ign = sample.get("ignored_instances") or {}
            ign_boxes = _np(ign["bboxes"]).reshape(-1, 4) if "bboxes" in ign else np.zeros((0, 4))
            ign_labels = _np(ign["labels"]).reshape(-1) if "labels" in ign else np.zeros(0, int)
            g_boxes = _np(gt["bboxes"]).reshape(-1, 4)
            g_labels = _np(gt["labels"]).reshape(-1)
            pred = sample["pred_instances"]
            self.results.append(
                {
                    "gt": {
                        "bboxes": np.concatenate([g_boxes, ign_boxes]),
                        "labels": np.concatenate([g_labels, ign_labels]).astype(np.int64),
                        "difficult": np.r_[
                            np.zeros(len(g_labels), bool), np.ones(len(ign_labels), bool)
                        ],
                    },
                    "det": {
                        "bboxes": _np(pred["bboxes"]).reshape(-1, 4),
                        "scores": _np(pred["scores"]).reshape(-1),
                        "labels": _np(pred["labels"]).reshape(-1).astype(np.int64),
                    },
                }
            )

    def compute_metrics(self, results: list) -> dict[str, float]:
        """``{"mAP", "mAP_11points", "mAP_area", "AP_<class>"}`` (``AP_<class>`` in eval_mode)."""
        classes = list((self.dataset_meta or {}).get("classes", []))
        num_classes = len(classes) or 1 + max(
            [int(r["gt"]["labels"].max()) for r in results if len(r["gt"]["labels"])] + [0]
        )
        gts = {i: r["gt"] for i, r in enumerate(results)}
        dets = {i: r["det"] for i, r in enumerate(results)}
        res = eval_voc(dets, gts, range(num_classes), iou_thr=self.iou_thr)
        logger = MMLogger.get_current_instance()
        lines = [f"{'class':>14} {'gts':>6} {'dets':>7} {'AP11':>7} {'AParea':>7}"]
        out: dict[str, float] = {
            "mAP": res["mAP"][self.eval_mode],
            "mAP_11points": res["mAP"]["11points"],
            "mAP_area": res["mAP"]["area"],
        }
        for c, r in res["per_class"].items():
            name = classes[c] if c < len(classes) else str(c)
            lines.append(
                f"{name:>14} {r['num_gt']:>6} {r['num_dets']:>7} "
                f"{r['ap']['11points']:>7.4f} {r['ap']['area']:>7.4f}"
            )
            out[f"AP_{name}"] = r["ap"][self.eval_mode]
        lines.append(
            f"mAP@{self.iou_thr}: 11points {out['mAP_11points']:.4f} area {out['mAP_area']:.4f}"
        )
        logger.info("\n" + "\n".join(lines))
        return out
