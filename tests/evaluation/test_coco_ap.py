"""COCO AP 0.5:0.95 through pycocotools on hand-made cases."""

from __future__ import annotations

import math

import pytest

from wsod.evaluation.coco import coco_ap


def _gt(difficult_second: bool = True) -> dict:
    return {
        "images": [{"id": 1, "file_name": "a.jpg", "width": 300, "height": 300}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "difficult": 0},
            {
                "id": 2,
                "image_id": 1,
                "category_id": 1,
                "bbox": [150, 150, 50, 50],
                "difficult": int(difficult_second),
            },
        ],
    }


def test_coco_ap_by_hand(capsys):
    # one det with IoU 100*62 / 100*100 = 0.62 on the normal box: a match at IoU thresholds
    # .50 .55 .60 (3 of 10), precision 1 at recall 1 there -> AP = 3/10, AP50 = 1, AP75 = 0.
    # A higher-scored det sits exactly on the difficult box (passed as iscrowd): ignored.
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 62], "score": 0.5},
        {"image_id": 1, "category_id": 1, "bbox": [150, 150, 50, 50], "score": 0.9},
    ]
    r = coco_ap(_gt(), dets)
    assert r["AP"] == pytest.approx(0.3) and r["AP50"] == pytest.approx(1.0)
    assert r["AP75"] == 0.0
    assert r["per_class"][1] == pytest.approx(0.3) and math.isnan(r["per_class"][2])
    assert capsys.readouterr().out == ""  # pycocotools' prints are captured
    assert "Average Precision" in r["log"]
    # the same box counted (not difficult): the .9 det is a TP at every threshold, the .5 det
    # a TP at 3 thresholds: recall 1/2 with precision 1, then 1 at precision 1 for .5-.6;
    # recall 1/2 only for the other 7, where COCO's 101 recall levels 0, .01 .. .50 (51 of 101)
    # have precision 1 -> AP = (3 * 1 + 7 * 51/101) / 10
    r = coco_ap(_gt(difficult_second=False), dets)
    assert r["AP"] == pytest.approx((3 + 7 * 51 / 101) / 10, abs=1e-9)


def test_coco_ap_no_detections():
    r = coco_ap(_gt(), [])
    assert r["AP"] == 0.0 and r["per_class"][1] == 0.0 and math.isnan(r["per_class"][2])
