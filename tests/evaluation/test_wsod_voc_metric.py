"""``WSODVOCMetric`` (mmengine metric in mmdet's registry) gives the same numbers as eval_voc."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wsod.evaluation.voc import eval_voc


def _samples(dets: dict, gts: dict) -> list[dict]:
    from mmengine.structures import InstanceData

    out = []
    for i in sorted(gts):
        g, d = gts[i], dets.get(i)
        diff = g["difficult"]
        gt = InstanceData(
            bboxes=torch.tensor(g["bboxes"][~diff], dtype=torch.float32).reshape(-1, 4),
            labels=torch.tensor(g["labels"][~diff]),
        )
        ign = InstanceData(
            bboxes=torch.tensor(g["bboxes"][diff], dtype=torch.float32).reshape(-1, 4),
            labels=torch.tensor(g["labels"][diff]),
        )
        if d is None:
            pred = InstanceData(
                bboxes=torch.zeros(0, 4),
                scores=torch.zeros(0),
                labels=torch.zeros(0, dtype=torch.long),
            )
        else:
            pred = InstanceData(
                bboxes=torch.tensor(d["bboxes"], dtype=torch.float32),
                scores=torch.tensor(d["scores"], dtype=torch.float32),
                labels=torch.tensor(d["labels"]),
            )
        out.append({"gt_instances": gt, "ignored_instances": ign, "pred_instances": pred})
    return out


@pytest.mark.parametrize("mode", ["11points", "area"])
def test_metric_matches_eval_voc(mode: str):
    from mmdet.registry import METRICS
    from test_voc_vs_mmdet import random_case

    import wsod.evaluation.metric  # noqa: F401  (registers WSODVOCMetric)

    n_cls = 6
    dets, gts = random_case(5, n_cls=n_cls)
    metric = METRICS.build(dict(type="WSODVOCMetric", eval_mode=mode))
    metric.dataset_meta = {"classes": [f"c{k}" for k in range(n_cls)]}
    samples = _samples(dets, gts)
    for k in range(0, len(samples), 8):  # batches of 8 images
        metric.process({}, samples[k : k + 8])
    res = metric.evaluate(len(samples))
    # our math on float32-rounded boxes, as the metric sees them
    dets32 = {
        i: {
            **d,
            "bboxes": d["bboxes"].astype(np.float32).astype(np.float64),
            "scores": d["scores"].astype(np.float32).astype(np.float64),
        }
        for i, d in dets.items()
    }
    gts32 = {
        i: {**g, "bboxes": g["bboxes"].astype(np.float32).astype(np.float64)}
        for i, g in gts.items()
    }
    ref = eval_voc(dets32, gts32, range(n_cls))
    assert res["wsod_voc/mAP"] == pytest.approx(ref["mAP"][mode], abs=1e-9)
    assert res["wsod_voc/mAP_11points"] == pytest.approx(ref["mAP"]["11points"], abs=1e-9)
    assert res["wsod_voc/mAP_area"] == pytest.approx(ref["mAP"]["area"], abs=1e-9)
    assert res["wsod_voc/AP_c0"] == pytest.approx(ref["per_class"][0]["ap"][mode], abs=1e-9)
    assert 0.05 < res["wsod_voc/mAP"] < 0.95
    with pytest.raises(ValueError, match="eval_mode"):
        METRICS.build(dict(type="WSODVOCMetric", eval_mode="12points"))
