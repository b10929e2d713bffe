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
