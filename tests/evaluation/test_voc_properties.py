"""Property tests of the VOC evaluator (``wsod.evaluation.voc``) on cases hypothesis generates.

- ``eval_voc`` equals mmdet 3.3.0's ``eval_map`` (``eval_mode`` pinned) on generated images with
  GT boxes (difficult ones too), jittered hits, duplicates and background boxes, in both AP
  modes;
- in the official devkit's 1-based inclusive pixel convention: our evaluator on boxes converted
  once at the edge (``voc_box_to_xyxy``, what the VOC loader does) equals ``eval_map`` with
  ``use_legacy_coordinate=True`` (the ``+1`` widths) on the raw devkit boxes;
- AP does not depend on the order in which images and detections are listed, and lies in
  [0, 1]; AP from a PR curve is in [0, 1] and 11-point AP never exceeds the area AP's envelope
  maximum.

Scores are distinct in the generated cases: with tied scores the PR curve depends on the order
of the tied detections in any VOC evaluator (ours sorts stably, mmdet's ``np.argsort`` does not),
so no order-free answer exists to compare with.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_voc_vs_mmdet import to_mmdet

from wsod.datasets.voc import voc_box_to_xyxy
from wsod.evaluation.voc import average_precision, eval_voc

N_CLS = 3
CANVAS = 200  # small canvas: boxes of different images and classes overlap often


@st.composite
def voc_case(draw: st.DrawFn) -> tuple[dict, dict]:
    """(dets_by_image, gts_by_image) with 0-based labels and integer devkit-style boxes
    (x1 <= x2, y1 <= y2, 1-based inclusive when read as the devkit's)."""
    n_img = draw(st.integers(1, 5))
    gts, rows = {}, []
    for i in range(n_img):
        k = draw(st.integers(0, 4))
        g = [_box(draw) for _ in range(k)]
        labels = draw(st.lists(st.integers(0, N_CLS - 1), min_size=k, max_size=k))
        difficult = draw(st.lists(st.booleans(), min_size=k, max_size=k))
        gts[i] = {
            "bboxes": np.asarray(g, np.float64).reshape(-1, 4),
            "labels": np.asarray(labels, np.int64),
            "difficult": np.asarray(difficult, bool),
        }
        for b, c in zip(g, labels, strict=True):
            for _ in range(draw(st.integers(0, 2))):  # hits and duplicates, jittered
                d = draw(st.lists(st.integers(-15, 15), min_size=4, max_size=4))
                rows.append((i, _fix(np.add(b, d)), c))
        for _ in range(draw(st.integers(0, 3))):  # background boxes of any class
            rows.append((i, _box(draw), draw(st.integers(0, N_CLS - 1))))
    # distinct scores (see the module docstring), in a random order
    ranks = draw(st.permutations(range(len(rows))))
    dets: dict[int, dict] = {}
    for (i, b, c), r in zip(rows, ranks, strict=True):
        d = dets.setdefault(i, {"bboxes": [], "scores": [], "labels": []})
        d["bboxes"].append(b)
        d["scores"].append((r + 1) / (len(rows) + 1))
        d["labels"].append(c)
    dets = {
        i: {
            "bboxes": np.asarray(d["bboxes"], np.float64).reshape(-1, 4),
            "scores": np.asarray(d["scores"], np.float64),
            "labels": np.asarray(d["labels"], np.int64),
        }
        for i, d in dets.items()
    }
    return dets, gts


def _box(draw: st.DrawFn) -> list[int]:
    x, y = draw(st.integers(1, CANVAS)), draw(st.integers(1, CANVAS))
    w, h = draw(st.integers(0, 80)), draw(st.integers(0, 80))
    return [x, y, x + w, y + h]


def _fix(b: np.ndarray) -> list[int]:
    x1, y1 = max(int(b[0]), 1), max(int(b[1]), 1)
    return [x1, y1, max(int(b[2]), x1), max(int(b[3]), y1)]


def _eval_map(dets: dict, gts: dict, mode: str, legacy: bool) -> tuple[float, list]:
    from mmdet.evaluation.functional import eval_map

    det_results, annotations = to_mmdet(dets, gts, N_CLS)
    return eval_map(
        det_results,
        annotations,
        iou_thr=0.5,
        eval_mode=mode,
        use_legacy_coordinate=legacy,
        logger="silent",
        nproc=1,
    )


def _assert_same(ours: dict, mean_ap: float, results: list, mode: str) -> None:
    for c in range(N_CLS):
        assert ours["per_class"][c]["num_gt"] == results[c]["num_gts"]
        assert ours["per_class"][c]["num_dets"] == results[c]["num_dets"]
        if results[c]["num_gts"]:
            ap = ours["per_class"][c]["ap"][mode]
            assert ap == pytest.approx(float(results[c]["ap"]), abs=1e-5), c
    if any(r["num_gts"] for r in results):
        assert ours["mAP"][mode] == pytest.approx(mean_ap, abs=1e-5)
    else:
        assert np.isnan(ours["mAP"][mode])


def _continuous(case: dict) -> dict:
    """Devkit boxes (1-based inclusive) -> the code's 0-based continuous corners."""
    return {
        i: {**d, "bboxes": np.array([voc_box_to_xyxy(*b) for b in d["bboxes"]]).reshape(-1, 4)}
        for i, d in case.items()
    }


@pytest.mark.parametrize("mode", ["11points", "area"])
@settings(max_examples=50)  # each example starts eval_map's process pool
@given(case=voc_case())
def test_eval_voc_equals_mmdet_eval_map(mode: str, case: tuple[dict, dict]) -> None:
    dets, gts = case
    ours = eval_voc(dets, gts, range(N_CLS))
    mean_ap, results = _eval_map(dets, gts, mode, legacy=False)
    _assert_same(ours, mean_ap, results, mode)


@pytest.mark.parametrize("mode", ["11points", "area"])
@settings(max_examples=50)
@given(case=voc_case())
def test_devkit_plus_one_boxes_converted_at_the_edge_equal_legacy_eval_map(
    mode: str, case: tuple[dict, dict]
) -> None:
    dets, gts = case
    ours = eval_voc(_continuous(dets), _continuous(gts), range(N_CLS))
    mean_ap, results = _eval_map(dets, gts, mode, legacy=True)
    _assert_same(ours, mean_ap, results, mode)


@given(case=voc_case(), data=st.data())
def test_ap_does_not_depend_on_listing_order(case: tuple[dict, dict], data: st.DataObject) -> None:
    dets, gts = case
    ours = eval_voc(dets, gts, range(N_CLS))
    image_order = data.draw(st.permutations(sorted(gts)))
    shuffled_dets = {}
    for i in image_order:
        if i in dets:
            p = np.asarray(data.draw(st.permutations(range(len(dets[i]["scores"])))), np.int64)
            shuffled_dets[i] = {k: v[p] for k, v in dets[i].items()}
    again = eval_voc(shuffled_dets, {i: gts[i] for i in image_order}, range(N_CLS))
    for mode in ("11points", "area"):
        for c in range(N_CLS):
            a, b = ours["per_class"][c]["ap"][mode], again["per_class"][c]["ap"][mode]
            assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-12)
            assert np.isnan(a) or 0.0 <= a <= 1.0


@given(
    st.lists(st.tuples(st.booleans(), st.floats(0, 1)), max_size=30),
    st.integers(1, 30),
)
def test_ap_of_any_curve_is_within_unit_interval(hits: list, num_gt: int) -> None:
    tp = np.array([h for h, _ in hits], dtype=np.float64)
    ctp, cfp = np.cumsum(tp), np.cumsum(1 - tp)
    recall = np.minimum(ctp / num_gt, 1.0)
    precision = ctp / np.maximum(ctp + cfp, 1e-12)
    for mode in ("11points", "area"):
        ap = average_precision(recall, precision, mode)
        assert 0.0 <= ap <= 1.0 + 1e-12
        assert ap <= (precision.max() if len(precision) else 0.0) + 1e-12
