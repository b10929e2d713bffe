"""Every strong-stage config builds; the MobileNetV2 Faster R-CNN config runs one training
iteration and one prediction on a real VOC image (tiny inputs)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs" / "faster_rcnn").glob("*.py"))
MOBILE = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py"
IMAGE_ID = "000012"  # VOC07 train: one car


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _cfg(path):
    from mmengine.config import Config

    import wsod.models  # noqa: F401

    return Config.fromfile(str(path))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_builds(path):
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _cfg(path)
    classes = cfg.train_dataloader.dataset.metainfo["classes"]
    assert cfg.model.roi_head.bbox_head.num_classes == len(classes)
    assert cfg.train_cfg.type == "IterBasedTrainLoop"
    assert cfg.test_evaluator.type == "WSODDumpCocoResults"
    assert any(h["type"] == "WSODFiniteLossHook" for h in cfg.custom_hooks)
    model = MODELS.build(cfg.model)
    assert model.roi_head.bbox_head.num_classes == len(classes)
    assert len(list(model.parameters())) > 50


def _voc_sample(voc_root: Path, scale: tuple[int, int], train: bool) -> dict:
    """One real VOC image through mmdet's transforms (boxes from its XML: tests may read GT)."""
    from mmcv.transforms import Compose
    from mmdet.utils import register_all_modules

    from wsod import VOC_CLASSES
    from wsod.datasets.voc import parse_voc_xml

    register_all_modules()
    ann = parse_voc_xml(voc_root / "Annotations" / f"{IMAGE_ID}.xml", VOC_CLASSES)
    instances = [
        {"bbox": list(o["bbox"]), "bbox_label": o["category_id"] - 1, "ignore_flag": 0}
        for o in ann["objects"]
    ]
    steps = [dict(type="LoadImageFromFile")]
    if train:
        steps.append(dict(type="LoadAnnotations", with_bbox=True))
    steps += [
        dict(type="Resize", scale=scale, keep_ratio=True),
        dict(
            type="PackDetInputs",
            meta_keys=("img_id", "img_path", "ori_shape", "img_shape", "scale_factor"),
        ),
    ]
    results = Compose(steps)(
        {
            "img_path": str(voc_root / "JPEGImages" / f"{IMAGE_ID}.jpg"),
            "img_id": 12,
            "instances": instances,
        }
    )
    return {"inputs": [results["inputs"]], "data_samples": [results["data_samples"]]}


def _one_iteration_and_predict(model, voc_root, scale):
    from mmengine.optim import OptimWrapper

    model.train()
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    optim = OptimWrapper(
        torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.001, momentum=0.9)
    )
    log_vars = model.train_step(_voc_sample(voc_root, scale, train=True), optim)
    for key in ("loss", "loss_rpn_cls", "loss_rpn_bbox", "loss_cls", "loss_bbox"):
        assert np.isfinite(float(torch.as_tensor(log_vars[key]).detach())), (key, log_vars)
    assert float(log_vars["loss"]) > 0
    changed = [
        n
        for n, p in model.named_parameters()
        if p.requires_grad and not torch.equal(p.detach(), before[n])
    ]
    assert any("roi_head" in n for n in changed) and any("rpn_head" in n for n in changed)

    model.eval()
    # after one iteration the classifier scores ~1/21 per class, under the config's score_thr:
    # keep every box so that the checks below always run
    model.roi_head.test_cfg.score_thr = 0.0
    with torch.no_grad():
        (pred,) = model.test_step(_voc_sample(voc_root, scale, train=False))
    inst = pred.pred_instances
    h, w = pred.ori_shape  # 000012 is 500x333: boxes are in original pixels
    assert (w, h) == (500, 333)
    assert inst.bboxes.shape[1] == 4 and len(inst.bboxes) == len(inst.scores) == len(inst.labels)
    assert 0 < len(inst.bboxes) <= model.roi_head.test_cfg.max_per_img
    b = inst.bboxes.numpy()
    assert b[:, 0].min() >= 0 and b[:, 1].min() >= 0
    assert b[:, 2].max() <= w + 1e-3 and b[:, 3].max() <= h + 1e-3
    assert (b[:, 2:] >= b[:, :2]).all() and int(inst.labels.max()) < 20
    assert float(inst.scores.min()) >= 0 and float(inst.scores.max()) <= 1
    return log_vars


def test_mobilenetv2_loads_imagenet_weights_and_trains(voc_root):
    from mmdet.registry import MODELS

    from wsod.utils.weights import ensure_torchvision_checkpoint

    cfg = _cfg(MOBILE)
    assert cfg.model.backbone.init_cfg.checkpoint == "torchvision://mobilenet_v2"
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    path = ensure_torchvision_checkpoint("mobilenet_v2")
    assert path is not None, "offline MobileNetV2 weights are missing"
    state = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("features.0.0.weight", "features.7.conv.1.0.weight", "features.18.0.weight"):
        assert torch.equal(model.backbone.state_dict()[key], state[key]), key
    # frozen stride-2/4 stages stay frozen; stride-8 on trains
    assert not model.backbone.features[3].conv[0][0].weight.requires_grad
    assert model.backbone.features[4].conv[0][0].weight.requires_grad
    frozen_before = model.backbone.features[0][0].weight.detach().clone()
    _one_iteration_and_predict(model, voc_root, scale=(256, 256))
    assert torch.equal(model.backbone.features[0][0].weight, frozen_before)


def _car_image_dataset(cfg, voc_root, tmp_path, annotations):
    """The config's training dataset on VOC image 000012 (500x333) with these pseudo
    annotations (dicts with bbox xywh and any extra keys; category 7 = car)."""
    from mmdet.registry import DATASETS
    from mmdet.utils import register_all_modules

    from wsod.utils.io import write_json

    register_all_modules()
    classes = cfg.train_dataloader.dataset.metainfo["classes"]
    anns = [
        {
            "id": k + 1,
            "image_id": 12,
            "category_id": 7,
            "area": a["bbox"][2] * a["bbox"][3],
            "iscrowd": 0,
            **a,
        }
        for k, a in enumerate(annotations)
    ]
    image = {"id": 12, "file_name": f"JPEGImages/{IMAGE_ID}.jpg", "width": 500, "height": 333}
    write_json(
        tmp_path / "pl.json",
        {
            "images": [image],
            "categories": [{"id": i + 1, "name": n} for i, n in enumerate(classes)],
            "annotations": anns,
        },
    )
    ds_cfg = copy.deepcopy(cfg.train_dataloader.dataset)
    ds_cfg.update(ann_file=str(tmp_path / "pl.json"), data_root=str(voc_root))
    return DATASETS.build(ds_cfg)


BG03 = (
    REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)
CPU4E = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py"


@pytest.mark.parametrize("path, weight", [(BG03, 0.3)], ids=["bg03"])
def test_background_weight_scales_only_background_rois(path, weight):
    """The bg03 config's RoI classification loss: a background RoI counts ``weight`` of what it
    does in cpu-4e, an object RoI the same; everything else in the model is cpu-4e's."""
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    weighted, plain = _cfg(path), _cfg(CPU4E)
    a, b = copy.deepcopy(weighted.model), copy.deepcopy(plain.model)
    a.roi_head.bbox_head.pop("loss_cls")
    b.roi_head.bbox_head.pop("loss_cls")
    assert a == b
    assert (
        weighted.train_cfg == plain.train_cfg and weighted.param_scheduler == plain.param_scheduler
    )
    loss_w = MODELS.build(weighted.model.roi_head.bbox_head.loss_cls)
    loss_p = MODELS.build(plain.model.roi_head.bbox_head.loss_cls)
    torch.manual_seed(0)
    logits = torch.randn(8, 21)
    background = torch.full((8,), 20, dtype=torch.long)
    objects = torch.tensor([0, 3, 6, 6, 14, 14, 19, 8])
    assert torch.allclose(loss_w(logits, background), weight * loss_p(logits, background))
    assert torch.allclose(loss_w(logits, objects), loss_p(logits, objects))
    mixed = torch.cat([background[:4], objects[:4]])
    assert loss_w(logits, mixed) < loss_p(logits, mixed)
