"""benchmarks/box_trust_signals.py (a labelled diagnostic): its AUC, its signals and its grading,
each against a hand count that a planted fault breaks."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bts", REPO / "benchmarks/box_trust_signals.py")
bts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bts)


def pairwise_auc(signal, right):
    """The share of (right, wrong) pairs the signal orders right first (ties: half)."""
    pairs = [
        (a, b)
        for a, b in itertools.product(range(len(right)), repeat=2)
        if right[a] and not right[b]
    ]
    return sum(
        1.0 if signal[a] > signal[b] else 0.5 if signal[a] == signal[b] else 0.0 for a, b in pairs
    ) / len(pairs)


def test_auc_counts_pairs_with_ties_half():
    rng = np.random.default_rng(0)
    signal = rng.integers(0, 4, 30).astype(float)  # many ties
    right = rng.random(30) < 0.4
    assert np.isclose(bts.auc(signal, right), pairwise_auc(signal, right))
    assert np.isclose(bts.auc(-signal, right), 1 - pairwise_auc(signal, right))
    assert bts.auc(signal, np.ones(30, bool)) is None


def test_group_signals_read_the_boxes_of_one_class():
    # sorted by score: the top box, one on top of it, one elsewhere
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 9], [50, 50, 60, 60]], float)
    scores = np.array([0.9, 0.6, 0.5])
    s = bts.group_signals(boxes, scores, top=10)
    assert s["score"] == 0.9
    assert np.isclose(s["margin"], 0.9 - 0.5)  # the box apart, not the one on top of it
    assert np.isclose(s["agreement"], (0.9 * 0.6 + 0.0 * 0.5) / (0.6 + 0.5))
    assert np.isclose(bts.group_signals(boxes, scores, top=2)["agreement"], 0.9)  # best other box
    alone = bts.group_signals(boxes[:1], scores[:1], top=10)
    assert alone["margin"] == 0.9 and alone["agreement"] == 0.0


def test_collect_grades_the_top_box_of_each_labelled_class():
    split = {
        "images": [
            {"id": 1, "width": 100, "height": 100, "labels": [1, 2]},
            {"id": 2, "width": 100, "height": 100, "labels": [1]},
        ]
    }
    gt = {
        "images": split["images"],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10]},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10]},
        ],
    }
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.8},  # right
        {"image_id": 1, "category_id": 1, "bbox": [60, 60, 10, 10], "score": 0.3},
        {"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.7},  # no b object
        {"image_id": 1, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.9},  # not labelled
        {"image_id": 2, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.2},  # wrong
        {"image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.1},  # right, not top
    ]
    rows = {(r["image_id"], r["class"]): r for r in bts.collect(dets, split, gt, top=10)}
    assert set(rows) == {(1, 1), (1, 2), (2, 1)}
    assert [rows[k]["right"] for k in [(1, 1), (1, 2), (2, 1)]] == [True, False, False]
    assert rows[(1, 1)]["few_labels"] == -2 and rows[(2, 1)]["few_labels"] == -1
    assert np.isclose(rows[(1, 1)]["small"], -0.01)
    # class 1's two top boxes: 0.8 ranks above 0.2 within the class
    assert rows[(1, 1)]["class_rank"] == 1.0 and rows[(2, 1)]["class_rank"] == 0.5
    curve = bts.keep_curve(list(rows.values()), "score", per_class=False, n_objects=2)
    assert curve[0] == {"share": 1.0, "boxes": 3, "precision": 1 / 3, "recall": 0.5}
