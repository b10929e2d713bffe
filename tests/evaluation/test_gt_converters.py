"""The ground-truth converters (wsod.evaluation.gt) and the one ignore rule, by hand and on a
real VOC gt file written by the data stage; every consumer (VOC AP, COCO AP, box precision /
recall) applies the same rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wsod.contracts import detections_by_image, is_ignored
from wsod.evaluation.coco import coco_ap
from wsod.evaluation.gt import class_ids, gt_by_image, gt_to_arrays, load_gt
from wsod.evaluation.localization import box_precision_recall, read_reference_boxes
from wsod.evaluation.voc import eval_voc


def _hand_gt() -> dict:
    """Three images: 1 has a normal, a difficult and a crowd box; 2 none; 3 one box."""
    return {
        "images": [
            {"id": 1, "file_name": "a.jpg", "width": 200, "height": 200},
            {"id": 2, "file_name": "b.jpg", "width": 200, "height": 200},
            {"id": 3, "file_name": "c.jpg", "width": 200, "height": 200},
        ],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 3, "category_id": 2, "bbox": [5, 5, 10, 20]},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "difficult": 0},
            {"id": 3, "image_id": 1, "category_id": 1, "bbox": [100, 100, 40, 40], "difficult": 1},
            {"id": 4, "image_id": 1, "category_id": 1, "bbox": [60, 0, 30, 30], "iscrowd": 1},
        ],
    }


@pytest.mark.parametrize(
    "ann, ignored",
    [
        ({}, False),
        ({"difficult": 0, "iscrowd": 0}, False),
        ({"difficult": 1}, True),
        ({"iscrowd": 1}, True),
        ({"difficult": 0, "iscrowd": True}, True),
        ({"difficult": True, "iscrowd": 0}, True),
    ],
)
def test_ignore_rule(ann: dict, ignored: bool):
    assert is_ignored(ann) is ignored


def test_gt_to_arrays_by_hand():
    a = gt_to_arrays(_hand_gt())
    np.testing.assert_array_equal(a["image_ids"], [3, 1, 1, 1])  # the file's order
    np.testing.assert_allclose(a["bboxes"][0], [5, 5, 15, 25])  # xywh -> x1y1x2y2
    np.testing.assert_array_equal(a["labels"], [2, 1, 1, 1])
    np.testing.assert_array_equal(a["ignore"], [False, False, True, True])
    np.testing.assert_array_equal(a["image_set"], [1, 2, 3])  # images without boxes too
    assert a["bboxes"].dtype == np.float64 and a["ignore"].dtype == bool


def test_gt_by_image_by_hand():
    g = gt_by_image(_hand_gt())
    assert list(g) == [1, 2, 3]  # every image, in the file's image order
    np.testing.assert_allclose(
        g[1]["bboxes"], [[0, 0, 50, 50], [100, 100, 140, 140], [60, 0, 90, 30]]
    )
    np.testing.assert_array_equal(g[1]["difficult"], [False, True, True])
    assert g[2]["bboxes"].shape == (0, 4) and g[2]["labels"].shape == (0,)
    assert g[2]["difficult"].dtype == bool
    np.testing.assert_array_equal(g[3]["labels"], [2])


def test_every_metric_ignores_the_same_boxes():
    """A detection exactly on each ignored box (difficult, crowd) and one on the normal box:
    VOC AP, COCO AP and box precision all see one true positive and nothing else."""
    gt = _hand_gt()
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [100, 100, 40, 40], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [60, 0, 30, 30], "score": 0.8},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.7},
        {"image_id": 3, "category_id": 2, "bbox": [5, 5, 10, 20], "score": 0.6},
    ]
    voc = eval_voc(detections_by_image(dets), gt_by_image(gt), class_ids(gt))
    assert voc["per_class"][1]["num_gt"] == 1 and voc["per_class"][1]["num_tp"] == 1
    assert voc["mAP"]["area"] == pytest.approx(1.0)
    assert coco_ap(gt, dets)["AP"] == pytest.approx(1.0)
    a = gt_to_arrays(gt)
    pb = np.array([[100, 100, 140, 140], [60, 0, 90, 30], [0, 0, 50, 50], [5, 5, 15, 25]], float)
    pr = box_precision_recall(
        pb, [0.9, 0.8, 0.7, 0.6], [1, 1, 1, 2], [1, 1, 1, 3],
        a["bboxes"], a["labels"], a["image_ids"], gt_ignore=a["ignore"],
    )  # fmt: skip
    assert pr["overall"]["n_pred"] == 2 and pr["overall"]["tp"] == 2
    assert pr["overall"]["n_gt"] == 2 and pr["overall"]["precision"] == 1.0
    # without the rule the two ignored boxes would count as objects: recall 2/4
    flags = [dict(x, difficult=0, iscrowd=0) for x in gt["annotations"]]
    voc = eval_voc(
        detections_by_image(dets), gt_by_image({**gt, "annotations": flags}), class_ids(gt)
    )
    assert voc["per_class"][1]["num_gt"] == 3


@pytest.fixture(scope="module")
def voc_gt(voc_root: Path, tmp_path_factory) -> Path:
    from wsod.stages.data import run as data_run

    out = tmp_path_factory.mktemp("gt_conv")
    data_run(voc_root, out, format="voc", splits=("val",), limit=8)
    return out / "val_gt.json"


def test_converters_on_a_real_voc_gt_file(voc_gt: Path):
    raw = json.loads(voc_gt.read_text())
    gt = load_gt(voc_gt)
    flat, per = gt_to_arrays(gt), gt_by_image(gt)
    assert len(flat["image_ids"]) == len(raw["annotations"]) > 0
    assert list(per) == [im["id"] for im in raw["images"]]
    # the ignore flags are the file's difficult / iscrowd flags, whatever the copy holds
    expected = [bool(a.get("difficult") or a.get("iscrowd")) for a in raw["annotations"]]
    np.testing.assert_array_equal(flat["ignore"], expected)
    assert sum(len(g["labels"]) for g in per.values()) == len(raw["annotations"])
    # flat rows and per-image groups hold the same boxes
    for img_id, g in per.items():
        sel = flat["image_ids"] == img_id
        np.testing.assert_allclose(g["bboxes"], flat["bboxes"][sel])
        np.testing.assert_array_equal(g["difficult"], flat["ignore"][sel])
    # each row is its annotation, xywh -> x1y1x2y2 (the XML round trip is in test_evaluate_stage)
    for k, ann in enumerate(raw["annotations"]):
        x, y, w, h = ann["bbox"]
        np.testing.assert_allclose(flat["bboxes"][k], [x, y, x + w, y + h])
        assert flat["labels"][k] == ann["category_id"] and flat["image_ids"][k] == ann["image_id"]
    # the reference reader of the diagnostics is the same converter
    ref = read_reference_boxes(voc_gt)
    for k in flat:
        np.testing.assert_array_equal(ref[k], flat[k])


def test_real_voc_gt_with_a_difficult_box_is_ignored_everywhere(voc_gt: Path, tmp_path: Path):
    """Flag one real box difficult: it leaves num_gt, and a detection on it is not a FP."""
    raw = json.loads(voc_gt.read_text())
    raw["annotations"][0]["difficult"] = 1
    a0 = raw["annotations"][0]
    dets = [{"image_id": a0["image_id"], "category_id": a0["category_id"], "bbox": a0["bbox"],
             "score": 0.9}]  # fmt: skip
    gt = load_gt(_write(tmp_path / "flagged_gt.json", raw))
    flat = gt_to_arrays(gt)
    assert flat["ignore"][0] and not flat["ignore"][1:].any()
    voc = eval_voc(detections_by_image(dets), gt_by_image(gt), class_ids(gt))
    c = voc["per_class"][a0["category_id"]]
    n_class = sum(a["category_id"] == a0["category_id"] for a in raw["annotations"])
    assert c["num_gt"] == n_class - 1 and c["num_tp"] == 0
    assert len(c["precision"]) == 0  # the detection is ignored: no point on the curve


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path
