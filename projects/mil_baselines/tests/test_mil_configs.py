"""Every WSDDN/OICR config of the project builds; the CPU MobileNetV2 OICR config (real ImageNet
weights) trains two steps and predicts on real VOC images through the core's weak-label dataset
and its transforms."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.proposal_grid import grid_proposals

PROJECT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(p for m in ("wsddn", "oicr") for p in (PROJECT / "configs" / m).glob("*.py"))
MOBILE = PROJECT / "configs/oicr/oicr_mobilenetv2_4k_voc07-train_voc07-val.py"


def _cfg(path):
    from mmengine.config import Config

    import wsod.datasets.weak_dataset  # noqa: F401
    import wsod.models  # noqa: F401

    return Config.fromfile(str(path))


def _no_download(cfg):
    cfg.model.backbone.init_cfg = None
    if "pretrained_fcs" in cfg.model.roi_head:
        cfg.model.roi_head.pretrained_fcs = None
    return cfg


def write_voc_inputs(voc_root: Path, out: Path, n: int = 3) -> tuple[Path, Path]:
    """A real VOC train split of ``n`` images (``wsod data``) + grid proposals (.pkl)."""
    import json

    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run

    run(voc_root, out, format="voc", splits=("train",), limit=n)
    split = json.loads((out / "train.json").read_text())
    props = {im["file_name"]: grid_proposals(im["width"], im["height"]) for im in split["images"]}
    pkl = out / "train_props.pkl"
    save_proposals(pkl, props, stage="test")  # .pkl (mmdet contract) + its .npz twin
    return out / "train.json", pkl


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_builds(path):
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _no_download(_cfg(path))
    assert cfg.default_scope == "mmdet"
    # MIL heads train on proposals: `wsod weak` and the Makefile wait for them
    assert cfg.get("train_reads_proposals", True)
    assert "projects.mil_baselines.mil_baselines" in cfg.custom_imports.imports
    assert cfg.train_cfg.type == "IterBasedTrainLoop"
    assert cfg.test_evaluator.type == "WSODDumpCocoResults"
    assert cfg.train_dataloader.dataset.type == "WSODWeakDataset"
    assert any(h["type"] == "CheckInvalidLossHook" for h in cfg.custom_hooks)
    head = cfg.model.roi_head
    method = path.name.split("_")[0]
    assert head.type == {"oicr": "WSODOICRHead", "wsddn": "WSODWSDDNHead"}[method]
    # the channel numbers chain: backbone -> RoI extractor -> head
    assert head.in_channels == head.bbox_roi_extractor.out_channels
    model = MODELS.build(cfg.model)
    assert model.roi_head.num_classes == (5 if "demo" in path.name else 20)
    if method == "oicr":
        assert len(model.roi_head.fc_refine) == 3


@pytest.mark.slow
def test_mobilenetv2_oicr_trains_and_predicts_on_real_voc(voc_root, tmp_path):
    from mmdet.registry import DATASETS, MODELS
    from mmengine.dataset import pseudo_collate
    from mmengine.optim import build_optim_wrapper
    from mmengine.registry import init_default_scope

    init_default_scope("mmdet")
    split, pkl = write_voc_inputs(voc_root, tmp_path / "data", n=3)
    cfg = _cfg(MOBILE)
    for key in ("train_dataloader", "test_dataloader"):
        ds_cfg = cfg[key].dataset
        ds_cfg.ann_file, ds_cfg.proposal_file = str(split), str(pkl)
    train_ds = DATASETS.build(cfg.train_dataloader.dataset)
    test_ds = DATASETS.build(cfg.test_dataloader.dataset)
    assert len(train_ds) == 3 and train_ds.metainfo["classes"][0] == "aeroplane"
    item = train_ds[0]
    sample = item["data_samples"]
    n_props = len(grid_proposals(*reversed(sample.ori_shape))["bboxes"])
    assert len(sample.proposals.bboxes) == min(n_props, 500)  # num_sample=500 caps it
    assert sample.metainfo["image_labels"], "every VOC train image has a label"
    assert "gt_instances" not in sample or len(sample.gt_instances) == 0  # no boxes, ever
    # proposals are transformed with the image (resize to short side 320-448)
    h, w = sample.img_shape
    assert min(h, w) in (320, 384, 448)
    assert sample.proposals.bboxes[:, 2].max() <= w + 1e-3

    model = MODELS.build(cfg.model)
    model.init_weights()  # real ImageNet MobileNetV2
    optim = build_optim_wrapper(model, cfg.optim_wrapper)
    model.train()
    batch = pseudo_collate([train_ds[0], train_ds[1]])
    for _ in range(2):
        losses = model.train_step(batch, optim)
        assert all(torch.isfinite(v) for v in losses.values()), losses
    model.eval()
    with torch.no_grad():
        out = model.test_step(pseudo_collate([test_ds[2]]))
    pred = out[0].pred_instances
    oh, ow = out[0].ori_shape
    assert 0 < len(pred) <= 100
    assert pred.labels.max() < 20 and pred.scores.min() >= 0
    assert pred.bboxes[:, 0::2].max() <= ow and pred.bboxes[:, 1::2].max() <= oh
    # boxes come back in original pixels: each matches a proposal of the original image
    orig = torch.from_numpy(grid_proposals(ow, oh)["bboxes"])
    assert torch.cdist(pred.bboxes, orig).min(dim=1).values.max() < 1.0
