import copy
import json

import numpy as np
import pytest

from wsod.contracts import (
    ContractError,
    detections_by_image,
    make_detections,
    validate_detections,
    validate_proposals,
    validate_split,
    xywh_to_xyxy,
    xyxy_to_xywh,
)


def _split():
    return {
        "info": {"data_root": "/d", "split": "train"},
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "images": [
            {"id": 5, "file_name": "JPEGImages/000005.jpg", "width": 10, "height": 8, "labels": [1]}
        ],
    }


def test_split_rejects_boxes():
    validate_split(_split())
    s = _split()
    s["annotations"] = []
    with pytest.raises(ContractError, match="must not contain 'annotations'"):
        validate_split(s)
    s = _split()
    s["images"][0]["bbox"] = [0, 0, 1, 1]
    with pytest.raises(ContractError, match="must not carry boxes"):
        validate_split(s)


def test_split_rejects_unknown_labels_and_duplicates():
    s = _split()
    s["images"][0]["labels"] = [7]
    with pytest.raises(ContractError, match="unknown category ids"):
        validate_split(s)
    s = _split()
    s["images"].append(dict(s["images"][0]))
    with pytest.raises(ContractError, match="duplicate image id"):
        validate_split(s)


def test_box_conversions_round_trip():
    b = np.array([[1.0, 2.0, 4.0, 6.0]])
    assert np.allclose(xyxy_to_xywh(b), [[1, 2, 3, 4]])
    assert np.allclose(xywh_to_xyxy(xyxy_to_xywh(b)), b)


def test_detections_validate_against_split_and_group():
    dets = make_detections(
        5, np.array([[0, 0, 4, 4], [1, 1, 3, 5]]), np.array([0.9, 0.2]), np.array([1, 2])
    )
    validate_detections(dets, _split())
    g = detections_by_image(dets)
    assert np.allclose(g[5]["bboxes"], [[0, 0, 4, 4], [1, 1, 3, 5]])
    assert list(g[5]["labels"]) == [1, 2]
    bad = [dict(dets[0], image_id=99)]
    with pytest.raises(ContractError, match="not in the split"):
        validate_detections(bad, _split())
    with pytest.raises(ContractError, match="bad bbox"):
        validate_detections([dict(dets[0], bbox=[0, 0, -1, 2])])


def test_proposals_contract():
    ok = {
        "JPEGImages/1.jpg": {
            "bboxes": np.zeros((2, 4), np.float32),
            "scores": np.ones(2, np.float32),
        }
    }
    validate_proposals(ok, file_names=["JPEGImages/1.jpg"])
    with pytest.raises(ContractError, match="have no proposals"):
        validate_proposals(ok, file_names=["JPEGImages/2.jpg"])
    with pytest.raises(ContractError, match="x2>=x1"):
        validate_proposals({"a": {"bboxes": np.array([[5, 0, 1, 1]], np.float32)}})


# --------------------------------------------------------------------------- converters
def test_detections_to_arrays_and_groups():
    from wsod.contracts import detections_to_arrays, group_by_image

    dets = [
        {"image_id": 7, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5},
        {"image_id": 5, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 7, "category_id": 1, "bbox": [5, 5, 1, 1], "score": 0.7},
    ]
    a = detections_to_arrays(dets)
    np.testing.assert_array_equal(a["image_ids"], [7, 5, 7])
    np.testing.assert_allclose(a["bboxes"], [[1, 2, 4, 6], [0, 0, 10, 10], [5, 5, 6, 6]])
    np.testing.assert_allclose(a["scores"], [0.5, 0.9, 0.7])
    np.testing.assert_array_equal(a["labels"], [2, 1, 1])
    assert a["image_ids"].dtype == np.int64 and a["bboxes"].dtype == np.float64
    # a generator works too; the empty list gives empty arrays of the right shapes
    np.testing.assert_array_equal(detections_to_arrays(iter(dets))["labels"], [2, 1, 1])
    empty = detections_to_arrays([])
    assert empty["bboxes"].shape == (0, 4) and empty["image_ids"].dtype == np.int64
    g = group_by_image(a)
    assert list(g) == [5, 7] and set(g[7]) == {"bboxes", "scores", "labels"}
    np.testing.assert_allclose(g[7]["scores"], [0.5, 0.7])  # input order kept in an image
    by_image = detections_by_image(dets)
    for k in (5, 7):
        for key in ("bboxes", "scores", "labels"):
            np.testing.assert_array_equal(by_image[k][key], g[k][key])
    assert detections_by_image([]) == {}


def test_pseudo_label_detections_default_score():
    from wsod.contracts import pseudo_label_detections

    pl = {
        "annotations": [
            {"id": 1, "image_id": 5, "category_id": 1, "bbox": [0, 0, 4, 4], "score": 0.25},
            {"id": 2, "image_id": 5, "category_id": 2, "bbox": [1, 1, 2, 2], "iscrowd": 0},
        ]
    }
    dets = pseudo_label_detections(pl)
    assert dets == [
        {"image_id": 5, "category_id": 1, "bbox": [0, 0, 4, 4], "score": 0.25},
        {"image_id": 5, "category_id": 2, "bbox": [1, 1, 2, 2], "score": 1.0},
    ]
    validate_detections(dets, _split())


# --------------------------------------------------------------------------- metrics
def _metrics() -> dict:
    entry = {
        "file": "w.json",
        "num_detections": 3,
        "mAP_11points": 0.5,
        "mAP_area": 0.4,
        "coco": {"AP": 0.2},
        "per_class": {
            "cat": {
                "class_id": 1,
                "num_gt": 2,
                "num_dets": 3,
                "num_tp": 1,
                "ap_11points": 0.5,
                "ap_area": 0.4,
                "coco_ap": 0.2,
                "max_recall": 0.5,
                "pr": {"recall": [0.0, 1.0], "precision": [1.0, 0.0]},
            },
            "dog": {
                "class_id": 2,
                "num_gt": 0,
                "num_dets": 0,
                "num_tp": 0,
                "ap_11points": None,
                "ap_area": None,
                "coco_ap": None,
                "max_recall": None,
                "pr": {"recall": [0.0, 1.0], "precision": [0.0, 0.0]},
            },
        },
    }
    return {
        "split": "val",
        "gt": "val_gt.json",
        "iou_thr": 0.5,
        "num_images": 1,
        "num_gt_boxes": 2,
        "classes": ["cat", "dog"],
        "caveats": ["a caveat"],
        "gt_note": "only evaluation reads boxes",
        "detectors": {"weak": entry, "strong": copy.deepcopy(entry)},
        "ratios": {"strong/weak": {"mAP_11points": 1.0, "lowered": False}},
    }


def test_metrics_contract_accepts_and_rejects(tmp_path):
    from wsod.contracts import load_metrics, ordered_detectors, validate_metrics

    m = validate_metrics(_metrics())
    assert ordered_detectors(["fsd", "x", "strong", "weak"]) == ["weak", "strong", "fsd", "x"]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(m))
    assert load_metrics(path) == m
    breaks = {
        "missing key 'detectors'": lambda m: m.pop("detectors"),
        "'classes' has the wrong type": lambda m: m.update(classes="cat"),
        "missing key 'per_class'": lambda m: m["detectors"]["weak"].pop("per_class"),
        "'mAP_area' must be a number or null": lambda m: m["detectors"]["strong"].update(
            mAP_area="0.4"
        ),
        "'coco.AP' must be a number": lambda m: m["detectors"]["weak"]["coco"].update(AP=True),
        "must map the file's 'classes'": lambda m: m["detectors"]["weak"]["per_class"].update(
            cow=m["detectors"]["weak"]["per_class"]["cat"]
        ),
        r"class 'cat' lacks \['pr'\]": lambda m: m["detectors"]["weak"]["per_class"]["cat"].pop(
            "pr"
        ),
        "differ in length": lambda m: m["detectors"]["weak"]["per_class"]["dog"]["pr"][
            "recall"
        ].pop(),
        "boolean 'lowered'": lambda m: m["ratios"]["strong/weak"].pop("lowered"),
        "'train' lacks 'gt'": lambda m: m.update(train={"split": "train"}),
    }
    for msg, corrupt in breaks.items():
        bad = _metrics()
        corrupt(bad)
        path.write_text(json.dumps(bad))
        with pytest.raises(ContractError, match=f"metrics.json.*{msg}"):
            load_metrics(path)
