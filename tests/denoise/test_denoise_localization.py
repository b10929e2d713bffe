"""CorLoc and box precision / recall (wsod.evaluation.localization) on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.evaluation.localization import (
    box_precision_recall,
    corloc,
    localization_quality,
    match_image_class,
)

# Reference boxes: image 1 has two class-1 objects, image 2 one class-1 and one class-2 object
GT_B = np.array([[0, 0, 10, 10], [20, 20, 30, 30], [0, 0, 10, 10], [50, 50, 70, 70]], float)
GT_L = np.array([1, 1, 1, 2])
GT_I = np.array([1, 1, 2, 2])


def test_match_greedy_by_score_each_gt_once_and_ignore():
    gt = np.array([[0, 0, 10, 10]], float)
    pred = np.array([[0, 0, 10, 10], [0, 0, 10, 9]], float)  # both hit the same object
    tp, ign, matched = match_image_class(pred, np.array([0.2, 0.9]), gt)
    assert tp.tolist() == [False, True]  # the higher score takes the object; the other is FP
    assert matched.tolist() == [True]
    tp, ign, _ = match_image_class(pred, np.array([0.2, 0.9]), gt, gt_ignore=np.array([True]))
    assert tp.tolist() == [False, False] and ign.tolist() == [True, True]


def test_iou_threshold_is_strict():
    gt = np.array([[0, 0, 10, 10]], float)
    half = np.array([[0, 0, 10, 5]], float)  # IoU exactly 0.5
    assert not match_image_class(half, np.array([1.0]), gt)[0][0]
    assert match_image_class(half, np.array([1.0]), gt, iou_thr=0.49)[0][0]


def test_box_precision_recall_hand_computed():
    pb = np.array(
        [
            [0, 0, 10, 10],  # img1 c1: hits gt0 -> TP
            [1, 1, 11, 11],  # img1 c1: IoU 81/119 with gt0, already taken -> FP
            [20, 20, 29, 30],  # img1 c1: hits gt1 -> TP
            [0, 0, 10, 10],  # img2 c2: wrong place for class 2 -> FP
            [50, 50, 70, 70],  # img2 c1: a class-2 location -> FP
        ],
        float,
    )
    ps = np.array([0.9, 0.8, 0.1, 0.5, 0.4])
    pl = np.array([1, 1, 1, 2, 1])
    pi = np.array([1, 1, 1, 2, 2])
    r = box_precision_recall(pb, ps, pl, pi, GT_B, GT_L, GT_I)
    o = r["overall"]
    assert (o["n_pred"], o["tp"], o["n_gt"]) == (5, 2, 4)
    assert o["precision"] == pytest.approx(2 / 5) and o["recall"] == pytest.approx(2 / 4)
    c1, c2 = r["per_class"][1], r["per_class"][2]
    assert (c1["precision"], c1["recall"]) == (pytest.approx(2 / 4), pytest.approx(2 / 3))
    assert (c2["precision"], c2["recall"]) == (0.0, 0.0)
    empty = box_precision_recall(np.zeros((0, 4)), [], [], [], GT_B, GT_L, GT_I)
    assert empty["overall"]["precision"] is None and empty["overall"]["recall"] == 0.0


def test_corloc_hand_computed():
    pb = np.array(
        [
            [20, 20, 30, 30],  # img1 c1 top (0.9): hits gt1 -> hit
            [90, 90, 99, 99],  # img1 c1 lower score
            [40, 40, 49, 49],  # img2 c1 top (0.7): misses
            [0, 0, 10, 10],  # img2 c1 lower score, would hit but is not the top
        ],
        float,
    )
    ps = np.array([0.9, 0.2, 0.7, 0.6])
    pl = np.array([1, 1, 1, 1])
    pi = np.array([1, 1, 2, 2])
    # labelled pairs: (1,1), (2,1), (2,2) [no box -> miss], (1,3) [no reference box -> left out]
    pairs = np.array([[1, 1], [2, 1], [2, 2], [1, 3]])
    r = corloc(pb, ps, pl, pi, GT_B, GT_L, GT_I, pairs=pairs)
    assert r["per_class"][1] == {"n": 2, "hits": 1, "corloc": 0.5}
    assert r["per_class"][2] == {"n": 1, "hits": 0, "corloc": 0.0}
    assert r["mean"] == pytest.approx(0.25)
    assert r["overall"] == pytest.approx(1 / 3)
    assert r["n_pairs_without_gt"] == 1 and r["n_pairs"] == 3
    # equal top scores: the earlier box is the top box
    tie = corloc(pb[[2, 3]], [0.5, 0.5], [1, 1], [2, 2], GT_B, GT_L, GT_I, pairs=[[2, 1]])
    assert tie["mean"] == 0.0
    tie = corloc(pb[[3, 2]], [0.5, 0.5], [1, 1], [2, 2], GT_B, GT_L, GT_I, pairs=[[2, 1]])
    assert tie["mean"] == 1.0


def test_localization_quality_combines_numbers():
    pred = {
        "image_ids": np.array([1, 2]),
        "bboxes": np.array([[0, 0, 10, 10], [50, 50, 70, 70]], float),
        "scores": np.array([0.9, 0.8]),
        "labels": np.array([1, 2]),
    }
    ref = {"image_ids": GT_I, "bboxes": GT_B, "labels": GT_L, "ignore": np.zeros(4, bool)}
    pairs = np.array([[1, 1], [2, 1], [2, 2]])
    q = localization_quality(pred, ref, pairs, n_images=2)
    o = q["overall"]
    assert o["precision"] == 1.0 and o["recall"] == 0.5 and o["boxes_per_image"] == 1.0
    assert o["corloc"] == pytest.approx((0.5 + 1.0) / 2)  # class 1: 1 of 2; class 2: 1 of 1
    assert q["per_class"][1]["boxes_per_image"] == 0.5  # 1 box over 2 images labelled 1
