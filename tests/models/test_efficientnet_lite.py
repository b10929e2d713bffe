"""EfficientNet-Lite trunk: the ImageNet weights classify real VOC images sensibly (with the
normalisation the configs use), the mmdet backbone computes timm's features, and the CAM config
on Lite0 trains one step and predicts on real VOC images."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch
from proposal_grid import grid_proposals as _grid_proposals

REPO = Path(__file__).resolve().parents[2]
CAM_LITE0 = REPO / "configs/cam/cam_efficientnet-lite0_4k_voc07-train_voc07-val.py"
ARCHS = ("tf_efficientnet_lite0", "tf_efficientnet_lite1", "tf_efficientnet_lite2")

# ImageNet-1k classes that name a VOC class (index: first name of timm's ImageNetInfo)
IMAGENET_OF_VOC = {
    "cat": {281, 282, 283, 284, 285},  # tabby .. Egyptian cat
    "dog": set(range(151, 269)),  # Chihuahua .. Mexican hairless: the dog breeds
    "car": {407, 436, 468, 511, 609, 627, 656, 661, 717, 751, 817, 479, 581},
    "bus": {779, 874, 654},  # school bus, trolleybus, minibus
}
NAMES = {817: "sports car", 479: "car wheel", 581: "grille", 779: "school bus", 281: "tabby"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _single_object_images(voc_root: Path, cls: str, k: int = 2) -> list[str]:
    """The first ``k`` VOC train images holding one object only, of ``cls``, over 40 % of it."""
    found = []
    for img_id in (voc_root / "ImageSets/Main/train.txt").read_text().split():
        root = ET.parse(voc_root / "Annotations" / f"{img_id}.xml").getroot()
        objs = root.findall("object")
        if len(objs) != 1 or objs[0].find("name").text != cls:
            continue
        x1, y1, x2, y2 = (float(objs[0].find(f"bndbox/{t}").text) for t in
                          ("xmin", "ymin", "xmax", "ymax"))  # fmt: skip
        w, h = (int(root.find(f"size/{t}").text) for t in ("width", "height"))
        if (x2 - x1) * (y2 - y1) >= 0.4 * w * h:
            found.append(img_id)
        if len(found) == k:
            return found
    raise AssertionError(f"{voc_root}: fewer than {k} single-{cls} train images")


@pytest.fixture(scope="module")
def voc_class_images(voc_root):
    """(VOC class, image path) pairs: two clear single-object images of each of 4 classes."""
    return [
        (cls, voc_root / "JPEGImages" / f"{i}.jpg")
        for cls in IMAGENET_OF_VOC
        for i in _single_object_images(voc_root, cls)
    ]


def _imagenet_model(name: str):
    import timm

    from wsod.utils.weights import load_effnet_lite

    model = timm.create_model(name, pretrained=False)
    model.load_state_dict(load_effnet_lite(name), strict=True)  # every key, renamed
    return model.eval()


def _probabilities(model, images, mean, std) -> list[torch.Tensor]:
    """ImageNet class probabilities with timm's eval transform (resize, centre crop)."""
    from PIL import Image
    from timm.data import create_transform, resolve_data_config

    cfg = resolve_data_config({}, model=model)
    transform = create_transform(**{**cfg, "mean": mean, "std": std})
    with torch.no_grad():
        return [
            model(transform(Image.open(p).convert("RGB"))[None]).softmax(1)[0] for _, p in images
        ]


def test_imagenet_class_sets_name_what_they_say():
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    for index, name in NAMES.items():
        assert info.index_to_description(index).split(",")[0] == name


@pytest.mark.slow
@pytest.mark.parametrize("name", ARCHS)
def test_imagenet_weights_recognise_real_voc_images(name, voc_class_images):
    model = _imagenet_model(name)
    mean, std = model.pretrained_cfg["mean"], model.pretrained_cfg["std"]
    assert mean == std == (0.5, 0.5, 0.5)  # what WSODEfficientNetLite's docstring says
    probs = _probabilities(model, voc_class_images, mean, std)
    for (cls, path), p in zip(voc_class_images, probs, strict=True):
        top5 = set(p.topk(5).indices.tolist())
        assert top5 & IMAGENET_OF_VOC[cls], f"{path.name} ({cls}): ImageNet top-5 {top5}"
    if name == "tf_efficientnet_lite0":  # the wrong normalisation costs confidence
        wrong = _probabilities(
            model, voc_class_images, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        )

        def right_mass(ps):
            return np.mean(
                [
                    p[list(IMAGENET_OF_VOC[c])].sum().item()
                    for (c, _), p in zip(voc_class_images, ps, strict=True)
                ]  # fmt: skip
            )

        assert right_mass(probs) > right_mass(wrong)


@pytest.mark.parametrize("arch", ["lite0", "lite2"])
def test_backbone_computes_timm_features_with_the_weights(arch):
    from mmengine.runner.checkpoint import load_checkpoint

    from wsod.models.backbones import WSODEfficientNetLite

    name = f"tf_efficientnet_{arch}"
    net = _imagenet_model(name)
    backbone = WSODEfficientNetLite(arch=arch, out_indices=(0, 1, 2, 3, 4))
    load_checkpoint(backbone, f"timm://{name}", map_location="cpu", logger="silent")
    backbone.eval()
    x = torch.rand(1, 3, 96, 128)
    with torch.no_grad():
        outs = backbone(x)
        ref = net.forward_features(x)
    assert torch.equal(outs[-1], ref)  # same modules, same weights
    strides = [x.shape[-1] // o.shape[-1] for o in outs]
    assert strides == [2, 4, 8, 16, 32]
    assert [o.shape[1] for o in outs] == backbone.out_channels
    assert backbone.out_channels[-1] == 1280


def test_dilated_backbone_keeps_stride_16_and_freezes_stages():
    from wsod.models.backbones import WSODEfficientNetLite

    backbone = WSODEfficientNetLite(out_indices=(3, 4), dilate_last=True, frozen_stages=2)
    backbone.train()
    x = torch.rand(1, 3, 96, 128)
    s16, last = backbone(x)
    assert s16.shape[-2:] == last.shape[-2:] == (6, 8)  # stride 16 for both
    frozen = [backbone.conv_stem, backbone.bn1, *backbone.blocks[:3]]
    assert not any(p.requires_grad for m in frozen for p in m.parameters())
    assert all(p.requires_grad for p in backbone.blocks[3].parameters())
    assert not any(m.training for m in backbone.modules() if isinstance(m, torch.nn.BatchNorm2d))
    with pytest.raises(ValueError, match="arch='lite9'"):
        WSODEfficientNetLite(arch="lite9")


@pytest.mark.slow
def test_cam_lite0_config_trains_and_predicts_on_real_voc(voc_root, tmp_path):
    from mmdet.registry import DATASETS, MODELS
    from mmengine.config import Config
    from mmengine.dataset import pseudo_collate
    from mmengine.optim import build_optim_wrapper
    from mmengine.registry import init_default_scope

    import wsod.datasets.weak_dataset  # noqa: F401
    import wsod.models  # noqa: F401
    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run

    init_default_scope("mmdet")
    run(voc_root, tmp_path, format="voc", splits=("train",), limit=3)
    images = json.loads((tmp_path / "train.json").read_text())["images"]
    pkl = tmp_path / "props.pkl"
    save_proposals(pkl, {i["file_name"]: _grid_proposals(i["width"], i["height"]) for i in images},
                   stage="test")  # fmt: skip
    cfg = Config.fromfile(str(CAM_LITE0))
    import timm

    timm_cfg = timm.create_model("tf_efficientnet_lite0").pretrained_cfg
    assert cfg.model.data_preprocessor.mean == [255 * m for m in timm_cfg["mean"]]
    assert cfg.model.data_preprocessor.std == [255 * s for s in timm_cfg["std"]]
    for key in ("train_dataloader", "test_dataloader"):
        ds = cfg[key].dataset
        ds.ann_file, ds.proposal_file = str(tmp_path / "train.json"), str(pkl)
    train_ds = DATASETS.build(cfg.train_dataloader.dataset)
    test_ds = DATASETS.build(cfg.test_dataloader.dataset)

    model = MODELS.build(cfg.model)
    model.init_weights()  # real ImageNet EfficientNet-Lite0 through timm://
    ref = _imagenet_model("tf_efficientnet_lite0").state_dict()
    assert torch.equal(model.backbone.conv_head.weight, ref["conv_head.weight"])
    frozen = model.backbone.blocks[2][0].conv_pw.weight.detach().clone()
    tuned = model.backbone.blocks[6][0].conv_pwl.weight.detach().clone()
    optim = build_optim_wrapper(model, cfg.optim_wrapper)
    model.train()
    losses = model.train_step(pseudo_collate([train_ds[0], train_ds[1]]), optim)
    assert losses and all(torch.isfinite(v) for v in losses.values()), losses
    assert torch.equal(model.backbone.blocks[2][0].conv_pw.weight, frozen)  # stage 2 frozen
    assert not torch.equal(model.backbone.blocks[6][0].conv_pwl.weight, tuned)
    model.eval()
    with torch.no_grad():
        out = model.test_step(pseudo_collate([test_ds[2]]))
    pred = out[0].pred_instances
    oh, ow = out[0].ori_shape
    assert 0 < len(pred) <= 100
    assert pred.labels.max() < 20 and pred.scores.min() >= 0
    # boxes come back in original pixels: each is one of the image's proposals
    orig = torch.from_numpy(_grid_proposals(ow, oh)["bboxes"])
    assert torch.cdist(pred.bboxes, orig).min(dim=1).values.max() < 1.0


FRCNN_LITE0 = (
    REPO
    / "configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)


@pytest.mark.slow
def test_faster_rcnn_lite0_trains_and_predicts_on_a_real_voc_image(voc_root):
    """One iteration on VOC image 000012 (one car; a test may read its boxes) and a prediction."""
    from mmcv.transforms import Compose
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper

    import wsod.models  # noqa: F401
    from wsod import VOC_CLASSES
    from wsod.datasets.voc import parse_voc_xml

    register_all_modules()
    cfg = Config.fromfile(str(FRCNN_LITE0))
    model = MODELS.build(cfg.model)
    model.init_weights()
    assert model.neck.lateral_convs[0].conv.in_channels == model.backbone.out_channels[0] == 40
    ann = parse_voc_xml(voc_root / "Annotations/000012.xml", VOC_CLASSES)
    instances = [
        {"bbox": list(o["bbox"]), "bbox_label": o["category_id"] - 1, "ignore_flag": 0}
        for o in ann["objects"]
    ]

    def sample(train: bool):
        steps = [dict(type="LoadImageFromFile")]
        steps += [dict(type="LoadAnnotations", with_bbox=True)] if train else []
        steps += [dict(type="Resize", scale=(256, 256), keep_ratio=True)]
        steps += [dict(type="PackDetInputs", meta_keys=("img_id", "img_path", "ori_shape",
                                                        "img_shape", "scale_factor"))]  # fmt: skip
        r = Compose(steps)(
            {
                "img_path": str(voc_root / "JPEGImages/000012.jpg"),
                "img_id": 12,
                "instances": instances,
            }  # fmt: skip
        )
        return {"inputs": [r["inputs"]], "data_samples": [r["data_samples"]]}

    frozen = model.backbone.blocks[1][0].conv_pw.weight.detach().clone()
    tuned = model.backbone.blocks[2][0].conv_pw.weight.detach().clone()
    model.train()
    log_vars = model.train_step(sample(True), build_optim_wrapper(model, cfg.optim_wrapper))
    assert all(np.isfinite(float(torch.as_tensor(v).detach())) for v in log_vars.values())
    assert torch.equal(model.backbone.blocks[1][0].conv_pw.weight, frozen)  # stride 4 frozen
    assert not torch.equal(model.backbone.blocks[2][0].conv_pw.weight, tuned)  # stride 8 trains
    model.eval()
    model.roi_head.test_cfg.score_thr = 0.0  # an untrained head scores under the config's
    with torch.no_grad():
        (pred,) = model.test_step(sample(False))
    assert pred.ori_shape == (333, 500)
    b = pred.pred_instances.bboxes
    assert b.shape[1] == 4 and 0 < len(b) <= model.roi_head.test_cfg.max_per_img
    assert b[:, :2].min() >= 0 and b[:, 2].max() <= 500 + 1e-3 and b[:, 3].max() <= 333 + 1e-3
