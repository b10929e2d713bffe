"""``WSODChannelsLastHook``: the real strong detectors (MobileNetV2, Lite0) compute the same
outputs on a real VOC image with their weights in channels_last, because their RoI extractors
get NCHW features; mmcv's CPU ``roi_align`` alone gets channels_last input wrong."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from projects.channels_last.channels_last import WSODChannelsLastHook, contiguous
from tests.models.test_strong_configs import _cfg, _voc_sample

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.py"))

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_mmcv_roi_align_misreads_channels_last_input():
    """Why the hook hands RoI extractors contiguous features: the same values in NHWC memory
    give other RoI features, without an error."""
    from mmcv.ops import roi_align

    torch.manual_seed(0)
    feats = torch.randn(1, 8, 20, 24)
    rois = torch.tensor([[0.0, 1.0, 2.0, 15.0, 17.0]])
    plain = roi_align(feats, rois, (7, 7), 0.5, 2, "avg", True)
    nhwc = roi_align(feats.to(memory_format=torch.channels_last), rois, (7, 7), 0.5, 2, "avg", True)
    assert not torch.allclose(plain, nhwc, atol=1e-3)
    assert torch.equal(contiguous([feats.to(memory_format=torch.channels_last)])[0], feats)


def _features(model, sample) -> tuple[torch.Tensor, ...]:
    """The neck's feature maps of one image."""
    data = model.data_preprocessor(sample, False)
    with torch.no_grad():
        return model.extract_feat(data["inputs"])


def _roi_feats(model, feats) -> torch.Tensor:
    """The RoI extractor's features of fixed boxes (one per pyramid level's scale)."""
    extractor = model.roi_head.bbox_roi_extractor
    rois = torch.tensor(
        [[0, 10.0, 20.0, 60.0, 80.0], [0, 0.0, 0.0, 200.0, 180.0], [0, 30.0, 40.0, 150.0, 250.0]]
    )
    with torch.no_grad():
        return extractor(feats[: extractor.num_inputs], rois)


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_hook_converts_weights_and_keeps_the_features(config, voc_root):
    """Each measured config names the hook; with it the trunk and neck compute NHWC, their
    features and the RoI features equal those without it, and the RoI features are wrong once
    the RoI extractors' NCHW inputs are taken away."""
    from mmdet.registry import MODELS

    cfg = _cfg(config)
    assert [h.type for h in cfg.custom_hooks].count("WSODChannelsLastHook") == 1
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.eval()
    sample = _voc_sample(voc_root, (256, 256), train=False)
    reference = _features(model, sample)
    reference_rois = _roi_feats(model, reference)

    runner = SimpleNamespace(model=model)
    hook = WSODChannelsLastHook()
    hook.before_run(runner)
    hook.before_test(runner)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs and all(m.weight.is_contiguous(memory_format=torch.channels_last) for m in convs)
    feats = _features(model, sample)
    assert all(f.is_contiguous(memory_format=torch.channels_last) for f in feats)
    # equal up to the summation order of other kernels
    assert max(map(_error, feats, reference)) < 1e-3
    assert _error(_roi_feats(model, feats), reference_rois) < 1e-3

    hook.after_run(runner)  # the RoI extractor now reads NHWC features as NCHW
    assert not hook.handles
    assert _error(_roi_feats(model, feats), reference_rois) > 0.1


def _error(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference, relative to the largest value of ``want``."""
    return float((got - want).abs().max() / want.abs().max())
