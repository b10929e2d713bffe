"""WSODRoIDropBBoxHead (issue 39, lever 5): positive RoIs with a loss above the threshold leave
the RoI head's losses after the warm-up, and before it the head is mmdet's Shared2FCBBoxHead."""

from __future__ import annotations

import pytest
import torch
from mmengine.logging import MessageHub

import projects.roi_drop.roi_drop  # noqa: F401  (registers WSODRoIDropBBoxHead)
from tests.models.test_strong_configs import REPO, _cfg, _voc_sample

ROIDROP = (
    REPO
    / "projects/roi_drop/configs"
    / "faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03-roidrop_voc07-pseudo_voc07-val.py"
)
PLAIN = (
    REPO
    / "configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)
SCALE = (256, 256)


@pytest.fixture(autouse=True)
def _one_thread_and_iter_zero(one_torch_thread):
    hub = MessageHub.get_current_instance()
    hub.update_info("iter", 0)
    yield
    hub.update_info("iter", 0)


def _model(path, **roi_drop):
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _cfg(path)
    if roi_drop:
        cfg.model.roi_head.bbox_head.roi_drop.update(roi_drop)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train()
    return model


def _losses(model, voc_root):
    torch.manual_seed(1)  # the same RPN/RoI sampling for every model
    sample = model.data_preprocessor(_voc_sample(voc_root, SCALE, train=True), training=True)
    return model.loss(sample["inputs"], sample["data_samples"])


def test_before_the_warm_up_it_is_the_plain_head(voc_root):
    plain = _losses(_model(PLAIN), voc_root)
    drop_model = _model(ROIDROP, cls_thr=1e-6)  # would drop every positive once active
    MessageHub.get_current_instance().update_info(
        "iter", drop_model.roi_head.bbox_head.start_iter - 1
    )
    late = _losses(drop_model, voc_root)
    assert float(late["roi_drop"]) == 0
    for key in ("loss_cls", "loss_bbox"):
        assert torch.allclose(late[key], plain[key]), key


def test_after_the_warm_up_high_loss_positives_are_ignored(voc_root):
    model = _model(ROIDROP, cls_thr=1e-6, start_iter=0)  # every positive's CE is above 1e-6
    losses = _losses(model, voc_root)
    assert float(losses["roi_drop"]) > 0  # 000012's car gives positives (its box is one)
    assert float(losses["loss_bbox"]) == 0  # no positive left to regress
    # the classification loss is now the background RoIs' alone
    kept = _losses(_model(ROIDROP, cls_thr=1e6, start_iter=0), voc_root)
    assert float(kept["roi_drop"]) == 0 and float(kept["loss_bbox"]) > 0
    assert not torch.allclose(losses["loss_cls"], kept["loss_cls"])

    # only the losses above the threshold: between the smallest and largest positive CE
    head = model.roi_head.bbox_head
    labels = torch.tensor([3, 3, 20, 7])
    cls = torch.full((4, 21), -5.0)
    cls[0, 3] = 5.0  # confident in its label: CE ~ 0
    cls[1, 12] = 5.0  # confident in another class: CE ~ 10
    cls[3, 7] = 0.0
    cls[3, 20] = 0.0  # CE ~ log 2 + small
    head.cls_thr = 1.0
    drop_all, drop_reg = head.drop_masks(cls, torch.zeros(4, 80), labels, torch.zeros(4, 4))
    assert drop_all.tolist() == [False, True, False, False]  # the background RoI never drops
    assert drop_reg.tolist() == drop_all.tolist()


def test_regression_threshold_drops_regression_only(voc_root):
    model = _model(ROIDROP, cls_thr=1e6, reg_thr=1e-9, start_iter=0)
    losses = _losses(model, voc_root)
    assert float(losses["loss_bbox"]) == 0 and float(losses["roi_drop"]) == 0
    assert float(losses["loss_cls"]) > 0


def test_unknown_option_and_bad_threshold_are_refused():
    from mmdet.registry import MODELS

    cfg = _cfg(ROIDROP).model.roi_head.bbox_head
    for bad, match in ((dict(cls_th=1.0), "unknown"), (dict(cls_thr=0), "> 0")):
        c = cfg.copy()
        c.roi_drop = dict(c.roi_drop, **bad)
        with pytest.raises(ValueError, match=match):
            MODELS.build(c)
