"""bf16 autocast (``--precision``): the config switch, the optimizer wrapper, the fp32 islands
around mmcv's fp32-only ops, and fp32 test-time scores, on real VOC images and real configs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_strong_configs import MOBILE, _cfg, _voc_sample

from wsod.models.mixed_precision import (
    WSODAmpOptimWrapper,
    WSODFp32IslandsHook,
    fp32_method,
    to_fp32,
)
from wsod.models.roi_heads.cam_head import WSODCAMHead
from wsod.training.precision import resolve_precision, set_precision

WEAK = "configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("config", [MOBILE, WEAK])
def test_set_precision_switches_training_and_detection(config):
    from test_strong_configs import REPO

    cfg = _cfg(REPO / config)
    assert set_precision(cfg, "fp32") == "fp32"
    assert cfg.optim_wrapper.type == "OptimWrapper" and not cfg.test_cfg.get("fp16")
    before = cfg.optim_wrapper.optimizer.to_dict()
    assert set_precision(cfg, "bf16") == "bf16"
    assert cfg.optim_wrapper.type == "WSODAmpOptimWrapper"
    assert cfg.optim_wrapper.dtype == "bfloat16"
    assert cfg.optim_wrapper.optimizer.to_dict() == before  # optimizer, lr, clipping kept
    assert cfg.test_cfg.fp16 is True  # mmengine's TestLoop: autocast (bf16 on a CPU)
    set_precision(cfg, "bf16")  # twice: one hook
    assert [h.type for h in cfg.custom_hooks].count("WSODFp32IslandsHook") == 1


def test_set_precision_refuses_bad_values_and_foreign_wrappers():
    cfg = _cfg(MOBILE)
    with pytest.raises(ValueError, match="fp16.*expected one of auto, bf16, fp32"):
        set_precision(cfg, "fp16")
    cfg.optim_wrapper.type = "AmpOptimWrapper"
    with pytest.raises(ValueError, match="AmpOptimWrapper.*--precision fp32"):
        set_precision(cfg, "bf16")
    assert resolve_precision("auto") in ("bf16", "fp32")


def test_wrapper_refuses_fp16():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="float16.*AmpOptimWrapper"):
        WSODAmpOptimWrapper(optimizer=opt, dtype="float16")


def test_faster_rcnn_trains_and_detects_in_bf16_with_fp32_islands(voc_root):
    """One training step and one detection of the real MobileNetV2 Faster R-CNN on a real VOC
    image under bf16 autocast: without the islands mmcv's CPU NMS refuses bf16; with them the
    trunk computes in bf16, the heads hand fp32 to NMS and the losses, the fp32 weights learn."""
    from mmdet.registry import MODELS

    from wsod.models.roi_heads.cam_head import nms_detections  # noqa: F401  (registers heads)

    torch.manual_seed(0)
    model = MODELS.build(_cfg(MOBILE).model)
    model.init_weights()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optim = WSODAmpOptimWrapper(optimizer=torch.optim.SGD(params, lr=0.001, momentum=0.9))
    sample = _voc_sample(voc_root, (256, 256), train=True)
    with pytest.raises(RuntimeError, match="BFloat16"):
        model.train_step(sample, optim)

    hook = WSODFp32IslandsHook()
    hook.before_run(SimpleNamespace(model=model))
    dtypes = {}

    def record(name):
        def hook(mod, args, out):
            dtypes.setdefault(name, to_dtype(out))  # returns None: the output stays

        return hook

    model.neck.register_forward_hook(record("neck"))
    model.rpn_head.register_forward_hook(record("rpn_head"))
    model.roi_head.bbox_head.register_forward_hook(record("bbox_head"))
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    log_vars = model.train_step(sample, optim)
    assert dtypes == {"neck": torch.bfloat16, "rpn_head": torch.float32, "bbox_head": torch.float32}
    for key in ("loss", "loss_rpn_cls", "loss_rpn_bbox", "loss_cls", "loss_bbox"):
        assert np.isfinite(float(log_vars[key])), (key, log_vars)
    assert all(p.dtype == torch.float32 for p in params)
    assert any(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters()
               if "roi_head" in n and p.requires_grad)  # fmt: skip

    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        (pred,) = model.test_step(_voc_sample(voc_root, (256, 256), train=False))
    assert pred.pred_instances.scores.dtype == torch.float32
    assert pred.pred_instances.bboxes.dtype == torch.float32
    hook.after_run(None)
    assert not hook.handles


def to_dtype(out):
    """The dtype of a module's (first) tensor output."""
    while isinstance(out, list | tuple):
        out = out[0]
    return out.dtype


def test_islands_refuse_a_module_the_model_lacks():
    from mmdet.registry import MODELS

    model = MODELS.build(_cfg(MOBILE).model)
    with pytest.raises(ValueError, match="no module 'roi_head.bbox_hed'"):
        WSODFp32IslandsHook(outputs=["roi_head.bbox_hed"]).before_run(SimpleNamespace(model=model))


def test_fp32_method_runs_outside_autocast():
    class Probe(torch.nn.Module):
        @fp32_method
        def scores(self, x, *, y):
            return (x @ x.T).dtype, x.dtype, y.dtype

    x = torch.randn(4, 4, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.bfloat16
        assert Probe().scores(x, y=x) == (torch.float32,) * 3


def test_cam_scores_stay_fp32_under_autocast():
    """The CAM head's test-time scores: fp32 under autocast, equal to fp32 scores of the same
    features (bf16 would tie scores on steps of 0.004 near 0.5)."""
    torch.manual_seed(0)
    head = WSODCAMHead(num_classes=3, in_channels=8, featmap_stride=16, upsample=2)
    feats = torch.rand(1, 8, 6, 8)
    boxes = torch.tensor([[0.0, 0.0, 64.0, 48.0], [32.0, 16.0, 128.0, 96.0]])
    metas = [dict(img_shape=(96, 128))]
    plain = head.proposal_class_scores((feats,), [boxes], None, metas)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = head.proposal_class_scores((feats.bfloat16(),), [boxes], None, metas)[0]
    assert mixed.dtype == torch.float32
    expected = head.proposal_class_scores((to_fp32(feats.bfloat16()),), [boxes], None, metas)[0]
    assert torch.equal(mixed, expected) and torch.allclose(mixed, plain, atol=0.02)
