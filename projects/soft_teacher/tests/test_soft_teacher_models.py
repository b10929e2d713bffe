"""The semi-supervised strong modules (projects.soft_teacher.soft_teacher) and configs (projects/soft_teacher/configs/):
the teacher's boxes restricted to the image labels on hand-made pseudo instances, the
image-label dataset on real VOC images, and every soft-teacher config building."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from wsod.stages import data as data_stage
from wsod.utils.io import read_json, write_json

REPO = Path(__file__).resolve().parents[3]
PROJECT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((PROJECT / "configs").glob("*.py"))


def _instances(labels):
    from mmengine.structures import InstanceData

    n = len(labels)
    inst = InstanceData()
    inst.bboxes = torch.arange(n * 4, dtype=torch.float32).reshape(n, 4)
    inst.scores = torch.linspace(0.9, 0.1, n)
    inst.labels = torch.tensor(labels, dtype=torch.long)
    inst.reg_uncs = torch.arange(n, dtype=torch.float32)
    return inst


def test_restriction_keeps_only_the_image_classes_all_fields_aligned():
    from projects.soft_teacher.soft_teacher import restrict_to_image_labels

    inst = _instances([0, 3, 3, 5, 1])
    kept = restrict_to_image_labels(inst, [3, 1])
    assert kept.labels.tolist() == [3, 3, 1]  # several boxes of one class survive
    torch.testing.assert_close(kept.bboxes, inst.bboxes[[1, 2, 4]])
    torch.testing.assert_close(kept.scores, inst.scores[[1, 2, 4]])
    assert kept.reg_uncs.tolist() == [1.0, 2.0, 4.0]
    assert len(inst) == 5  # the input is unchanged
    assert len(restrict_to_image_labels(inst, [])) == 0
    assert len(restrict_to_image_labels(inst, [7])) == 0


@pytest.fixture(scope="module")
def voc_split(voc_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("semi_split")
    data_stage.run(voc_root, out, format="voc", splits=["train"], limit=3)
    return out / "train.json"


def _dataset(ann_file, root):
    from projects.soft_teacher.soft_teacher import WSODImageLabelCocoDataset

    split = read_json(ann_file)
    classes = tuple(c["name"] for c in sorted(split["categories"], key=lambda c: c["id"]))
    return WSODImageLabelCocoDataset(
        ann_file=str(ann_file),
        data_root=str(root),
        data_prefix={"img": ""},
        metainfo={"classes": classes},
        filter_cfg={"filter_empty_gt": False},
        pipeline=[],
    )


def test_image_label_dataset_carries_class_indices(voc_split, voc_root, tmp_path):
    from projects.soft_teacher.soft_teacher import IMAGE_LABELS_KEY

    split = read_json(voc_split)
    ds = _dataset(voc_split, voc_root)
    assert len(ds) == len(split["images"])
    infos = [ds.get_data_info(i) for i in range(len(ds))]
    by_path = {Path(d["img_path"]).name: d[IMAGE_LABELS_KEY] for d in infos}
    for im in split["images"]:
        assert by_path[Path(im["file_name"]).name] == sorted({c - 1 for c in im["labels"]})
        assert by_path[Path(im["file_name"]).name]  # VOC train images hold an object

    del split["images"][0]["labels"]
    write_json(tmp_path / "no_labels.json", split)
    with pytest.raises(KeyError, match="image-level"):
        _dataset(tmp_path / "no_labels.json", voc_root)


def _cfg(path):
    from mmengine.config import Config

    import wsod.models  # noqa: F401

    return Config.fromfile(str(path))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_soft_teacher_config_builds(path):
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _cfg(path)
    labelled, unlabelled = cfg.train_dataloader.dataset.datasets
    classes = labelled.metainfo["classes"]
    assert unlabelled.metainfo["classes"] == classes
    assert unlabelled.type == "WSODImageLabelCocoDataset"
    teacher_branch = unlabelled.pipeline[-1]["unsup_teacher"]
    assert "image_labels" in teacher_branch[-1]["meta_keys"]
    assert cfg.strong_inputs.which in ("rest", "all")
    hooks = [h["type"] for h in cfg.custom_hooks]
    assert hooks[0] == "WSODFiniteLossHook" and "MeanTeacherHook" in hooks
    assert cfg.test_evaluator.type == "WSODDumpCocoResults"
    cfg.model.detector.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == "WSODLabelRestrictedSoftTeacher"
    assert model.student.roi_head.bbox_head.num_classes == len(classes)
    assert model.teacher.roi_head.bbox_head.num_classes == len(classes)


def test_teacher_refuses_samples_without_image_labels():
    from mmdet.registry import MODELS
    from mmdet.structures import DetDataSample
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _cfg(CONFIGS[0])
    cfg.model.detector.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    sample = DetDataSample(metainfo={"img_path": "x.jpg", "img_shape": (64, 64)})
    with pytest.raises(KeyError, match="image_labels"):
        model.get_pseudo_instances(torch.zeros(1, 3, 64, 64), [sample])


def test_teacher_refuses_a_misspelled_semi_train_key():
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules

    register_all_modules()
    cfg = _cfg(CONFIGS[0])
    cfg.model.detector.backbone.init_cfg = None
    cfg.model.semi_train_cfg.top1_per_image_labels = True  # one letter too many
    with pytest.raises(ValueError, match="did you mean top1_per_image_label"):
        MODELS.build(cfg.model)


def test_unlabelled_split_rest_all_and_labels_from_boxes():
    from projects.soft_teacher.soft_teacher import (
        labelled_image_ids,
        labels_from_boxes,
        unlabeled_split,
    )

    ims = [{"id": i, "file_name": f"{i}.jpg", "width": 10, "height": 10} for i in (1, 2, 3)]
    cats = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    anns = [{"image_id": 1, "category_id": 2}, {"image_id": 1, "category_id": 1}]
    anns.append({"image_id": 3, "category_id": 2})
    train = {"images": ims, "categories": cats, "annotations": anns}
    assert labelled_image_ids(train) == {1, 3}
    assert labels_from_boxes(train) == {1: [1, 2], 2: [], 3: [2]}
    labels = {1: [1, 2], 2: [2, 1], 3: [2]}
    rest = unlabeled_split(train, labels, "rest", {"data_root": "r"})
    assert rest["images"] == [{**ims[1], "labels": [1, 2]}] and rest["categories"] == cats
    assert "annotations" not in rest and rest["info"] == {"data_root": "r"}
    every = unlabeled_split(train, labels, "all", {"data_root": "r"})
    assert [im["id"] for im in every["images"]] == [1, 2, 3]
    with pytest.raises(ValueError, match="no image-level labels"):
        unlabeled_split(train, {1: [1]}, "rest", {"data_root": "r"})
    with pytest.raises(ValueError, match="rest"):
        unlabeled_split(train, labels, "labelled", {"data_root": "r"})


def test_unsup_weight_burn_in_and_ramp():
    from projects.soft_teacher.soft_teacher import unsup_weight_at

    assert [unsup_weight_at(i, 2.0, 3, 0) for i in range(5)] == [0, 0, 0, 2.0, 2.0]
    assert [unsup_weight_at(i, 2.0, 1, 4) for i in range(6)] == [0, 0.5, 1.0, 1.5, 2.0, 2.0]
    assert unsup_weight_at(0, 1.0, 0, 0) == 1.0


def test_burn_in_hook_refuses_a_plain_detector_and_negative_iterations():
    from types import SimpleNamespace

    from projects.soft_teacher.soft_teacher import WSODBurnInHook

    with pytest.raises(ValueError, match="burn_in_iters"):
        WSODBurnInHook(-1)
    runner = SimpleNamespace(model=torch.nn.Linear(1, 1), max_iters=3)
    with pytest.raises(TypeError, match="student"):
        WSODBurnInHook(1).before_train(runner)


def test_select_pseudo_instances_threshold_restriction_and_top1_promotion():
    from mmengine.structures import InstanceData

    from projects.soft_teacher.soft_teacher import select_pseudo_instances

    found = InstanceData(
        bboxes=torch.arange(20, dtype=torch.float32).reshape(5, 4),
        labels=torch.tensor([0, 0, 1, 2, 1]),
        scores=torch.tensor([0.9, 0.2, 0.3, 0.95, 0.4]),
    )
    # image labels {0, 1}: class 2 goes; class 0 keeps its box above 0.5; class 1 has none
    plain, n = select_pseudo_instances(found, [0, 1], 0.5, top1=False)
    assert plain.labels.tolist() == [0] and n == 0
    kept, n = select_pseudo_instances(found, [0, 1], 0.5, top1=True)
    assert n == 1 and kept.labels.tolist() == [0, 1]
    assert kept.bboxes[1].tolist() == found.bboxes[4].tolist()  # class 1's best box (0.4)
    assert kept.scores.tolist() == [pytest.approx(0.9), 1.0]  # promoted: score 1
    assert found.scores[4] == pytest.approx(0.4)  # the input is unchanged
    # a labelled class the teacher did not detect at all gets no box
    none, n = select_pseudo_instances(found, [3], 0.5, top1=True)
    assert len(none) == 0 and n == 0
