"""VOC AP math on tiny cases computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wsod.evaluation.voc import average_precision, eval_voc, interpolated_pr, match_detections


def _img(boxes, labels, scores=None, difficult=None):
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    d = {"bboxes": boxes, "labels": np.asarray(labels, dtype=np.int64)}
    if scores is not None:
        d["scores"] = np.asarray(scores, dtype=np.float64)
    d["difficult"] = np.zeros(len(boxes), bool) if difficult is None else np.asarray(difficult)
    return d


def test_ap_hand_curve_both_modes():
    # 3 GT, 5 detections by score: TP FP TP FP TP
    # cum tp 1 1 2 2 3, cum fp 0 1 1 2 2
    # recall    1/3 1/3 2/3 2/3 1
    # precision 1   1/2 2/3 1/2 3/5
    rec = np.array([1, 1, 2, 2, 3]) / 3
    prec = np.array([1, 1 / 2, 2 / 3, 1 / 2, 3 / 5])
    # area: envelope 1 | 2/3 | 3/5 over recall steps of 1/3 each -> 1/3 + 2/9 + 1/5 = 34/45
    assert average_precision(rec, prec, "area") == pytest.approx(34 / 45, abs=1e-12)
    # 11 points: t=0,.1,.2,.3 -> 1 (4 points); t=.4,.5,.6 -> max(2/3,1/2,3/5)=2/3 (3 points);
    # t=.7,.8,.9,1 -> 3/5 (4 points); (4 + 2 + 2.4) / 11 = 8.4 / 11
    assert average_precision(rec, prec, "11points") == pytest.approx(8.4 / 11, abs=1e-12)


def test_ap_recall_never_reaches_high_thresholds():
    # 4 GT, 2 detections both TP: recall .25 .5, precision 1 1
    rec, prec = np.array([0.25, 0.5]), np.array([1.0, 1.0])
    # 11 points: t = 0 .. 0.5 reached (6 points of 1), t = .6 .. 1 not reached (0) -> 6/11
    assert average_precision(rec, prec, "11points") == pytest.approx(6 / 11)
    # area: 0.5 * 1
    assert average_precision(rec, prec, "area") == pytest.approx(0.5)


def test_ap_11point_threshold_float_quirk():
    # 10 GT, 3 TP: recall .1 .2 .3. np.arange(0, 1.001, .1)[3] = 0.30000000000000004 > 3/10,
    # so (as in mmdet, detectron2 and the devkit) only t = 0, .1, .2 are reached -> 3/11
    rec, prec = np.array([1, 2, 3]) / 10, np.ones(3)
    assert average_precision(rec, prec, "11points") == pytest.approx(3 / 11)


def test_ap_precision_envelope():
    # recall .5 .5 1, precision 1 .5 .67: the envelope lifts the dip at .5 -> area .5*1 + .5*2/3
    rec, prec = np.array([0.5, 0.5, 1.0]), np.array([1.0, 0.5, 2 / 3])
    assert average_precision(rec, prec, "area") == pytest.approx(0.5 + 1 / 3)
    # 11 points: t<=.5 -> 1 (6 points), t>=.6 -> 2/3 (5 points) -> (6 + 10/3) / 11
    assert average_precision(rec, prec, "11points") == pytest.approx((6 + 10 / 3) / 11)


def test_ap_empty_and_bad_mode():
    assert average_precision(np.zeros(0), np.zeros(0), "area") == 0.0
    assert average_precision(np.zeros(0), np.zeros(0), "11points") == 0.0
    with pytest.raises(ValueError, match="unknown AP mode"):
        average_precision(np.ones(1), np.ones(1), "12points")


def test_match_difficult_ignored_and_duplicates_fp():
    gt = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float)
    difficult = np.array([False, True])
    dets = np.array(
        [
            [20, 20, 30, 30],  # .9 on the difficult box -> ignored
            [0, 0, 10, 10],  # .8 on A -> TP
            [0, 0, 10, 9],  # .7 duplicate of A -> FP
            [50, 50, 60, 60],
        ],
        float,
    )  # .6 nowhere -> FP
    tp, fp = match_detections(dets, [0.9, 0.8, 0.7, 0.6], gt, difficult)
    assert tp.tolist() == [False, True, False, False]
    assert fp.tolist() == [False, False, True, True]


def test_match_higher_score_wins_and_iou_threshold_inclusive():
    gt = np.array([[0, 0, 10, 10]], float)
    # IoU(d0) = 60/100 = .6 with score .9; IoU(d1) = 1 with score .8: greedy by score -> d0 TP
    tp, fp = match_detections(np.array([[0, 0, 10, 6], [0, 0, 10, 10]], float), [0.9, 0.8], gt)
    assert tp.tolist() == [True, False] and fp.tolist() == [False, True]
    # IoU exactly 50/100 = .5 counts (>=), 49/100 does not
    tp, fp = match_detections(np.array([[0, 0, 10, 5]], float), [1.0], gt)
    assert tp.tolist() == [True]
    tp, fp = match_detections(np.array([[0, 0, 10, 4.9]], float), [1.0], gt)
    assert fp.tolist() == [True]


def test_eval_voc_hand_case():
    # class 1: image 1 has 2 GT, image 2 has 1 GT and no detections at all.
    # class 2: image 1 has 1 difficult GT only -> num_gt 0 -> AP nan, excluded from the mean.
    # class 3: 1 GT in image 2, no detections -> AP 0.
    gts = {
        1: _img(
            [[0, 0, 10, 10], [20, 20, 40, 40], [50, 50, 60, 60]],
            [1, 1, 2],
            difficult=[False, False, True],
        ),
        2: _img([[0, 0, 30, 30], [60, 60, 90, 90]], [1, 3]),
    }
    dets = {
        1: _img(
            [
                [0, 0, 10, 10],  # cls1 .9 TP
                [0, 0, 10, 10],  # cls1 .8 duplicate FP
                [20, 20, 40, 40],  # cls1 .7 TP
                [50, 50, 60, 60],  # cls2 .95 on the difficult box -> ignored
                [100, 100, 120, 120],
            ],  # cls2 .5 FP
            [1, 1, 1, 2, 2],
            scores=[0.9, 0.8, 0.7, 0.95, 0.5],
        )
    }
    r = eval_voc(dets, gts, [1, 2, 3])
    c1 = r["per_class"][1]
    # class 1: num_gt 3; TP FP TP -> recall 1/3 1/3 2/3, precision 1 1/2 2/3
    assert c1["num_gt"] == 3 and c1["num_dets"] == 3 and c1["num_tp"] == 2
    np.testing.assert_allclose(c1["recall"], [1 / 3, 1 / 3, 2 / 3])
    np.testing.assert_allclose(c1["precision"], [1, 1 / 2, 2 / 3])
    # area: 1/3 * 1 + 1/3 * 2/3 = 5/9; 11 points: t=0..0.3 -> 1 (4), t=.4..0.6 -> 2/3 (3) -> 6/11
    assert c1["ap"]["area"] == pytest.approx(5 / 9)
    assert c1["ap"]["11points"] == pytest.approx(6 / 11)
    assert c1["max_recall"] == pytest.approx(2 / 3)
    c2 = r["per_class"][2]
    assert c2["num_gt"] == 0 and math.isnan(c2["ap"]["area"]) and math.isnan(c2["ap"]["11points"])
    # the ignored detection leaves the curve; the FP stays
    assert c2["num_dets"] == 2 and len(c2["precision"]) == 1
    c3 = r["per_class"][3]
    assert c3["num_gt"] == 1 and c3["ap"]["area"] == 0.0 and c3["ap"]["11points"] == 0.0
    # mean over classes 1 and 3 only
    assert r["mAP"]["area"] == pytest.approx((5 / 9 + 0) / 2)
    assert r["mAP"]["11points"] == pytest.approx((6 / 11 + 0) / 2)


def test_eval_voc_perfect_and_unknown_image():
    gts = {7: _img([[1, 2, 30, 40], [5, 5, 9, 9]], [4, 5])}
    dets = {7: _img(gts[7]["bboxes"], [4, 5], scores=[0.3, 0.2])}
    r = eval_voc(dets, gts, [4, 5])
    assert r["mAP"] == {"11points": pytest.approx(1.0), "area": pytest.approx(1.0)}
    with pytest.raises(ValueError, match="no ground-truth entry"):
        eval_voc({8: dets[7]}, gts, [4, 5])
    # cross-class: a class-5 box on the class-4 object is a FP of class 5
    r = eval_voc({7: _img([[1, 2, 30, 40]], [5], scores=[0.9])}, gts, [4, 5])
    assert r["per_class"][5]["num_tp"] == 0 and r["per_class"][5]["ap"]["area"] == 0.0


def test_interpolated_pr():
    levels, p = interpolated_pr(np.array([0.5, 1.0]), np.array([1.0, 0.5]), 101)
    assert len(levels) == 101 and levels[50] == 0.5
    assert p[0] == 1.0 and p[50] == 1.0 and p[51] == 0.5 and p[100] == 0.5
    _, p = interpolated_pr(np.array([0.2]), np.array([1.0]), 11)
    assert p.tolist() == [1.0, 1.0, 1.0] + [0.0] * 8
