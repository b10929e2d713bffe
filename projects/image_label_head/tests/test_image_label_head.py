"""WSODImageLabelRoIHead on a real VOC image: its image-level loss trains, its test-time
rescoring multiplies each score by the class probability, unknown options are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.models.test_strong_configs import _cfg, _one_iteration_and_predict, _voc_sample

IMGLABEL = (
    Path(__file__).resolve().parents[1]
    / "configs/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03-imglabel_voc07-pseudo_voc07-val.py"
)


def test_image_label_head_learns_image_classes_and_rescores(voc_root):
    """The image-level classifier beside the RoI head: its loss is part of the step and moves
    its weights; at test time each score is the detector's x the class probability."""
    from mmdet.registry import MODELS

    torch.manual_seed(0)
    model = MODELS.build(_cfg(IMGLABEL).model)
    model.init_weights()
    before = model.roi_head.image_cls[1].weight.detach().clone()
    log_vars = _one_iteration_and_predict(model, voc_root, scale=(256, 256))
    assert np.isfinite(float(log_vars["loss_img_cls"])) and float(log_vars["loss_img_cls"]) > 0
    assert not torch.equal(model.roi_head.image_cls[1].weight, before)

    model.eval()
    model.test_cfg.rcnn.score_thr = 0.0  # keep every box: the check below always runs
    sample = _voc_sample(voc_root, (256, 256), train=False)
    with torch.no_grad():
        model.roi_head.test_cfg.image_label_rescore = False
        (plain,) = model.test_step(sample)
        model.roi_head.test_cfg.image_label_rescore = True
        (mixed,) = model.test_step(sample)
        feats = model.extract_feat(model.data_preprocessor(sample)["inputs"])
        probs = model.roi_head.image_logits(feats).sigmoid()[0]
    p, m = plain.pred_instances, mixed.pred_instances
    assert len(p.scores) > 0 and torch.equal(p.labels, m.labels)
    assert torch.allclose(m.scores, p.scores * probs[p.labels])


def test_image_label_head_refuses_unknown_options():
    from mmdet.registry import MODELS

    cfg = _cfg(IMGLABEL).model
    cfg.roi_head.image_label["in_chanels"] = 128
    with pytest.raises(ValueError, match="in_chanels"):
        MODELS.build(cfg)
