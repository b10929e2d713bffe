"""Multi-instance de-noise chains (SoS-WSOD's ``pgf``, MIST, WeakSAM's min-max + threshold) on
hand-made boxes whose right answer is computed by hand, composed with the image filter."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.denoise import ABLATION_CHAINS, STRATEGIES, apply_chain, build_chain, denoise_images

A = [0, 0, 50, 50]
B = [60, 60, 90, 90]
C = [60, 0, 90, 30]
PART = [5, 5, 25, 25]  # 100 % inside A


def dets(boxes, scores, labels):
    return {
        "bboxes": np.array(boxes, np.float64).reshape(-1, 4),
        "scores": np.array(scores, np.float64),
        "labels": np.array(labels, np.int64),
    }


def run1(name, d, image_labels=(1, 2), **params):
    return STRATEGIES[name](d, image_labels=np.array(image_labels), width=100, height=100, **params)


def rows(d):
    r = np.c_[d["labels"], d["scores"], d["bboxes"]]
    return sorted(map(tuple, r.round(6)))


def test_pgf_keeps_the_top_box_and_boxes_scoring_at_least_keep_thr():
    # class 1: A 0.9 (top), B 0.2 (= keep_thr: kept), C 0.19 (dropped);
    # class 2: every box below 0.2 -> only its top box (0.15) stays
    d = dets([A, B, C, A, B], [0.9, 0.2, 0.19, 0.15, 0.1], [1, 1, 1, 2, 2])
    out = run1("pgf", d, keep_thr=0.2)
    assert rows(out) == rows(dets([A, B, A], [0.9, 0.2, 0.15], [1, 1, 2]))
    # the threshold is absolute: 0.5 keeps class 1's top box only
    assert rows(run1("pgf", d, keep_thr=0.5)) == rows(dets([A, A], [0.9, 0.15], [1, 2]))


def test_pgf_drops_a_part_inside_a_kept_box_even_when_the_part_is_top1():
    # the part outscores the whole (WSOD's typical error): the whole is kept (0.5 >= 0.2) and the
    # part, 100 % inside it, goes although it ranks first; B is another object
    d = dets([PART, A, B], [0.9, 0.5, 0.3], [1, 1, 1])
    assert rows(run1("pgf", d)) == rows(dets([A, B], [0.5, 0.3], [1, 1]))
    # a whole below keep_thr is not kept, so it cannot drop the part
    d = dets([PART, A, B], [0.9, 0.1, 0.3], [1, 1, 1])
    assert rows(run1("pgf", d)) == rows(dets([PART, B], [0.9, 0.3], [1, 1]))
    # another class's box never contains
    d = dets([PART, A], [0.9, 0.5], [1, 2])
    assert len(run1("pgf", d)["scores"]) == 2


def test_pgf_containment_ratio_and_exempt_classes():
    half = [40, 0, 60, 50]  # area 1000, 500 of it inside A
    d = dets([A, half], [0.9, 0.5], [1, 1])
    assert len(run1("pgf", d, contain_thr=0.5)["scores"]) == 1
    assert len(run1("pgf", d, contain_thr=0.51)["scores"]) == 2
    d = dets([A, PART], [0.9, 0.5], [1, 1])
    assert len(run1("pgf", d, exempt=[1])["scores"]) == 2
    chain = build_chain([dict(type="pgf", exempt=["person"])], {"person": 1, "dog": 2})
    d = dets([A, PART, A, PART], [0.9, 0.5, 0.9, 0.5], [1, 1, 2, 2])
    out = apply_chain(d, chain, image_labels=[1, 2], width=100, height=100)
    assert rows(out) == rows(dets([A, PART, A], [0.9, 0.5, 0.9], [1, 1, 2]))
    with pytest.raises(ValueError, match="contain_thr"):
        run1("pgf", d, contain_thr=0)


def test_pgf_a_class_emptied_by_containment_keeps_its_top_box():
    # a (100) and b (90) contain each other >= 0.85 (90/90, 90/100), a and c (110) too
    # (100/110 = 0.91, 100/100), b lies in c (90/90): every box is inside another one
    a, b, c = [0, 0, 10, 10], [0, 0, 10, 9], [0, 0, 10, 11]
    d = dets([a, b, c, B], [0.8, 0.9, 0.7, 0.6], [1, 1, 1, 2])
    assert rows(run1("pgf", d)) == rows(dets([b, B], [0.9, 0.6], [1, 2]))
    # identical boxes: the first of them
    assert rows(run1("pgf", dets([A, A], [0.4, 0.4], [1, 1]))) == rows(dets([A], [0.4], [1]))


def test_pgf_zero_area_boxes_are_not_contained():
    flat = [10, 10, 10, 30]
    assert len(run1("pgf", dets([A, flat], [0.9, 0.5], [1, 1]))["scores"]) == 2


def test_weaksam_minmax_per_class_then_pgf_keeps_raw_scores():
    # class 1 scores 0.02, 0.06, 0.05 -> per-class min-max 0, 1, 0.75: keep >= 0.5 -> B, C
    d = dets([A, B, C], [0.02, 0.06, 0.05], [1, 1, 1])
    chain = build_chain(
        [dict(type="minmax_normalize", per_class=True), dict(type="pgf", keep_thr=0.5)]
    )
    out = apply_chain(d, chain, image_labels=[1], width=100, height=100)
    assert sorted(out["raw_scores"]) == [0.05, 0.06]
    np.testing.assert_allclose(sorted(out["scores"]), [0.75, 1.0])


def test_image_filter_after_normalisation_compares_the_detectors_score():
    # normalised, the class's best box scores 1.0; the detector gave it 0.06 < 0.2
    d = dets([A, B], [0.02, 0.06], [1, 1])
    chain = build_chain([dict(type="minmax_normalize"), dict(type="image_filter", min_score=0.2)])
    assert len(apply_chain(d, chain, image_labels=[1], width=100, height=100)["scores"]) == 0
    chain = build_chain([dict(type="minmax_normalize"), dict(type="image_filter", min_score=0.05)])
    assert len(apply_chain(d, chain, image_labels=[1], width=100, height=100)["scores"]) == 2


def test_image_filter_first_keeps_the_same_images_as_after_top1():
    per_image = {
        5: dets([PART, A, B], [0.9, 0.5, 0.3], [1, 1, 2]),
        6: dets([PART, A, B], [0.9, 0.5, 0.1], [1, 1, 2]),  # class 2's best 0.1 < 0.2
        7: dets([A, C], [0.3, 0.25], [1, 1]),  # class 2 has no box
    }
    images = [{"id": i, "width": 100, "height": 100, "labels": [1, 2]} for i in (5, 6, 7)]
    top1 = denoise_images(per_image, images, build_chain(ABLATION_CHAINS["top1+image_filter0.2"]))
    for name in ("image_filter0.2+pgf(0.2,0.85)", "image_filter0.2+mist(p0.5,iou0.2)"):
        out = denoise_images(per_image, images, build_chain(ABLATION_CHAINS[name]))
        assert [len(out[i]["scores"]) > 0 for i in (5, 6, 7)] == [True, False, False], name
        assert [len(top1[i]["scores"]) > 0 for i in (5, 6, 7)] == [True, False, False]
    pgf_chain = build_chain(ABLATION_CHAINS["image_filter0.2+pgf(0.2,0.85)"])
    pgf = denoise_images(per_image, images, pgf_chain)
    assert rows(pgf[5]) == rows(dets([A, B], [0.5, 0.3], [1, 2]))
    # MIST with p 0.5 of class 1's 2 boxes = 1 box: the top (the part)
    mist_chain = build_chain(ABLATION_CHAINS["image_filter0.2+mist(p0.5,iou0.2)"])
    mist = denoise_images(per_image, images, mist_chain)
    assert rows(mist[5]) == rows(dets([PART, B], [0.9, 0.3], [1, 2]))


def test_every_ablation_chain_builds_with_voc_names():
    from wsod import VOC_CLASSES

    cats = {n: k + 1 for k, n in enumerate(VOC_CLASSES)}
    for name, cfg in ABLATION_CHAINS.items():
        assert build_chain(cfg, cats), name
    nest = build_chain(ABLATION_CHAINS["image_filter0.2+pgf(0.2,0.85,nest)"], cats)
    nesting = ("bottle", "bus", "car", "chair", "cow", "pottedplant", "sheep")
    assert nest[-1][2]["exempt"] == [cats[n] for n in nesting]
