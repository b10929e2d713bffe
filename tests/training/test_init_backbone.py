"""`wsod strong --init-backbone`: the strong detector's backbone starts from the black box's
trained trunk (real configs: the Lite0 CAM and the Lite0 Faster R-CNN)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from wsod.training.config import load_config
from wsod.training.init_backbone import init_backbone_from

REPO = Path(__file__).resolve().parents[2]
CAM = REPO / "configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py"
LITE0 = REPO / (
    "configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)
MOBILE = (
    REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)


@pytest.fixture(scope="module")
def weak_run(tmp_path_factory) -> Path:
    """A weak stage's run as `wsod weak` leaves it: checkpoint, resolved config, model file;
    the CAM's trunk weights shifted by +1 so they differ from any ImageNet start."""
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    root = tmp_path_factory.mktemp("weak")
    cfg = load_config(CAM, None, error=ValueError)
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    state = {k: v + 1 if k.startswith("backbone.") and v.is_floating_point() else v
             for k, v in model.state_dict().items()}  # fmt: skip
    torch.save({"meta": {}, "state_dict": state}, root / "iter_8.pth")
    (root / "weak_config.py").write_text(cfg.pretty_text)
    record = {"checkpoint": str(root / "iter_8.pth"), "config": str(root / "weak_config.py")}
    (root / "weak_model.json").write_text(json.dumps(record))
    return root


def test_backbone_starts_from_the_black_box_trunk(weak_run):
    from mmdet.registry import MODELS

    cfg = load_config(LITE0, None, error=ValueError)
    ckpt = init_backbone_from(cfg, weak_run / "weak_model.json")
    assert ckpt == str(weak_run / "iter_8.pth")
    assert cfg.model.backbone.init_cfg == {"type": "Pretrained", "checkpoint": ckpt,
                                           "prefix": "backbone."}  # fmt: skip
    assert len(cfg.backbone_init_sha256) == 64  # in the resolved config: the fingerprint
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    saved = torch.load(ckpt, weights_only=True)["state_dict"]
    for key, value in model.backbone.state_dict().items():
        assert torch.equal(value, saved[f"backbone.{key}"]), key
    # a retrained black box at the same path changes the digest
    saved["backbone.conv_stem.weight"] += 1
    torch.save({"state_dict": saved}, ckpt)
    again = load_config(LITE0, None, error=ValueError)
    init_backbone_from(again, weak_run / "weak_model.json")
    assert again.backbone_init_sha256 != cfg.backbone_init_sha256


def test_refuses_another_backbone_or_a_missing_run(weak_run, tmp_path):
    cfg = load_config(MOBILE, None, error=ValueError)
    with pytest.raises(
        ValueError, match="WSODEfficientNetLite.*WSODMobileNetV2.*efficientnet-lite0"
    ):
        init_backbone_from(cfg, weak_run / "weak_model.json")
    with pytest.raises(ValueError, match="no such file; train the black box first"):
        init_backbone_from(cfg, tmp_path / "weak_model.json")
    (tmp_path / "weak_model.json").write_text("{}")
    with pytest.raises(ValueError, match="not a weak stage's model file"):
        init_backbone_from(cfg, tmp_path / "weak_model.json")


def test_refuses_a_checkpoint_without_the_backbone(weak_run, tmp_path):
    saved = torch.load(weak_run / "iter_8.pth", weights_only=True)["state_dict"]
    torch.save({"state_dict": {k: v for k, v in saved.items() if "blocks.6" not in k}},
               tmp_path / "iter_8.pth")  # fmt: skip
    record = {
        "checkpoint": str(tmp_path / "iter_8.pth"),
        "config": str(weak_run / "weak_config.py"),
    }
    (tmp_path / "weak_model.json").write_text(json.dumps(record))
    cfg = load_config(LITE0, None, error=ValueError)
    with pytest.raises(ValueError, match="lacks .* weights of the strong config's backbone"):
        init_backbone_from(cfg, tmp_path / "weak_model.json")
