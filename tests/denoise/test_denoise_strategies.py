"""Every de-noise strategy on hand-made boxes whose right answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.denoise import STRATEGIES, apply_chain, build_chain, denoise_images


def dets(boxes, scores, labels):
    return {
        "bboxes": np.array(boxes, np.float64).reshape(-1, 4),
        "scores": np.array(scores, np.float64),
        "labels": np.array(labels, np.int64),
    }


def run1(name, d, image_labels=(1, 2), width=100, height=100, **params):
    return STRATEGIES[name](
        d, image_labels=np.array(image_labels), width=width, height=height, **params
    )


def rows(d):
    """(label, score, x1, y1, x2, y2) rows, sorted, for order-free comparison."""
    r = np.c_[d["labels"], d["scores"], d["bboxes"]]
    return sorted(map(tuple, r.round(6)))


A = [0, 0, 50, 50]
B = [60, 60, 90, 90]
PART = [5, 5, 25, 25]  # inside A


def test_label_consistency_drops_unlabelled_classes():
    d = dets([A, B, A], [0.9, 0.8, 0.7], [1, 3, 2])
    out = run1("label_consistency", d, image_labels=[1, 2])
    assert out["labels"].tolist() == [1, 2]
    out = run1("label_consistency", d, image_labels=[])
    assert len(out["scores"]) == 0


def test_top1_one_box_per_class_ties_keep_first():
    d = dets([A, B, PART, B, A], [0.5, 0.9, 0.9, 0.3, 0.3], [1, 1, 1, 2, 2])
    out = run1("top1", d)
    # class 1: B (0.9, index 1) beats PART (0.9, index 2) by input order; class 2: identical
    # scores 0.3 -> the first (B)
    assert rows(out) == rows(dets([B, B], [0.9, 0.3], [1, 2]))


def test_top1_identical_boxes_keep_exactly_one():
    d = dets([A, A, A], [0.4, 0.4, 0.4], [1, 1, 1])
    out = run1("top1", d)
    assert len(out["scores"]) == 1


def test_topk():
    d = dets([A, B, PART, B], [0.1, 0.9, 0.5, 0.2], [1, 1, 1, 2])
    out = run1("topk", d, k=2)
    assert rows(out) == rows(dets([B, PART, B], [0.9, 0.5, 0.2], [1, 1, 2]))
    with pytest.raises(ValueError):
        run1("topk", d, k=0)


def test_score_threshold_with_fallback():
    d = dets([A, B, PART, B], [0.9, 0.6, 0.2, 0.1], [1, 1, 2, 2])
    out = run1("score_threshold", d, thr=0.5)
    # class 1: both >= 0.5; class 2: all below -> top-1 fallback keeps PART (0.2)
    assert rows(out) == rows(dets([A, B, PART], [0.9, 0.6, 0.2], [1, 1, 2]))
    out = run1("score_threshold", d, thr=0.5, fallback=False)
    assert out["labels"].tolist() == [1, 1]


def test_score_threshold_all_below_threshold_keeps_one_per_labelled_class():
    d = dets([A, B, PART], [0.01, 0.02, 0.03], [1, 1, 2])
    out = run1("score_threshold", d, thr=0.99)
    assert rows(out) == rows(dets([B, PART], [0.02, 0.03], [1, 2]))
    # an unlabelled class gets no fallback
    out = run1("score_threshold", d, image_labels=[1], thr=0.99)
    assert out["labels"].tolist() == [1]


def test_containment_drops_part_boxes_only_below_a_higher_box():
    d = dets([A, PART, B, PART], [0.9, 0.5, 0.4, 0.95], [1, 1, 1, 2])
    out = run1("containment", d, thr=0.85)
    # PART of class 1 lies fully inside A (higher score) -> dropped; B is not inside A;
    # PART of class 2 has no same-class container
    assert rows(out) == rows(dets([A, B, PART], [0.9, 0.4, 0.95], [1, 1, 2]))
    # the part scoring higher than its container survives (containment is one-directional)
    d2 = dets([A, PART], [0.5, 0.9], [1, 1])
    assert len(run1("containment", d2)["scores"]) == 2


def test_containment_ratio_threshold_and_exemptions():
    # half of the inner box lies in the outer one: ratio 0.5
    half = [40, 0, 60, 50]  # area 1000, intersection with A = 10*50 = 500
    d = dets([A, half], [0.9, 0.5], [1, 1])
    assert len(run1("containment", d, thr=0.5)["scores"]) == 1
    assert len(run1("containment", d, thr=0.51)["scores"]) == 2
    d = dets([A, PART], [0.9, 0.5], [1, 1])
    assert len(run1("containment", d, exempt=[1])["scores"]) == 2


def test_containment_identical_boxes_keep_first():
    d = dets([A, A, A], [0.7, 0.7, 0.7], [1, 1, 1])
    out = run1("containment", d)
    assert len(out["scores"]) == 1


def test_containment_exempt_by_name_through_chain():
    chain = build_chain([dict(type="containment", exempt=["person"])], {"person": 1})
    out = apply_chain(
        dets([A, PART], [0.9, 0.5], [1, 1]), chain, image_labels=[1], width=100, height=100
    )
    assert len(out["scores"]) == 2
    with pytest.raises(ValueError, match="unknown class name"):
        build_chain([dict(type="containment", exempt=["horse"])], {"person": 1})


def test_mist_top_fraction_then_iou_below_threshold():
    far1, far2, far3 = [0, 0, 10, 10], [50, 50, 60, 60], [80, 0, 90, 10]
    near = [1, 0, 11, 10]  # IoU with far1 = 90/110
    boxes = [far1, near, far2, far3] + [[20, 20, 21, 21]] * 6
    scores = [0.9, 0.8, 0.7, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    d = dets(boxes, scores, [1] * 10)
    # p=0.4 of 10 boxes -> top 4: far1, near, far2, far3; near overlaps far1 -> dropped
    out = run1("mist", d, p=0.4, thr=0.2)
    assert rows(out) == rows(dets([far1, far2, far3], [0.9, 0.7, 0.6], [1, 1, 1]))
    # p small -> ceil(0.05 * 10) = 1 box: the top-1 is always kept
    out = run1("mist", d, p=0.05, thr=0.2)
    assert rows(out) == rows(dets([far1], [0.9], [1]))
    # IoU exactly at the threshold is suppressed ("keep only if IoU < thr")
    touch = [5, 0, 15, 10]  # IoU with far1 = 50 / 150 = 1/3
    d = dets([far1, touch], [0.9, 0.8], [1, 1])
    assert len(run1("mist", d, p=1.0, thr=1 / 3)["scores"]) == 1
    assert len(run1("mist", d, p=1.0, thr=0.34)["scores"]) == 2


def test_minmax_normalize_per_image_and_equal_scores():
    d = dets([A, B, PART], [0.2, 0.6, 0.4], [1, 1, 2])
    out = run1("minmax_normalize", d)
    np.testing.assert_allclose(out["scores"], [0.0, 1.0, 0.5])
    np.testing.assert_allclose(out["raw_scores"], [0.2, 0.6, 0.4])
    out = run1("minmax_normalize", d, per_class=True)
    np.testing.assert_allclose(out["scores"], [0.0, 1.0, 1.0])
    out = run1("minmax_normalize", dets([A, B], [0.3, 0.3], [1, 1]))
    np.testing.assert_allclose(out["scores"], [1.0, 1.0])


def test_normalize_then_threshold_keeps_raw_scores():
    chain = build_chain([dict(type="minmax_normalize"), dict(type="score_threshold", thr=0.5)])
    out = apply_chain(
        dets([A, B, PART], [0.02, 0.06, 0.05], [1, 1, 1]),
        chain,
        image_labels=[1],
        width=100,
        height=100,
    )
    # normalised: 0, 1, 0.75 -> B and PART survive; raw scores are kept beside
    np.testing.assert_allclose(sorted(out["raw_scores"]), [0.05, 0.06])


def test_size_filter_relative_to_image_with_fallback():
    tiny = [0, 0, 1, 1]
    thin = [0, 0, 90, 5]  # aspect 18
    big = [0, 0, 100, 100]
    d = dets([tiny, thin, big, A], [0.9, 0.8, 0.7, 0.6], [1, 1, 1, 2])
    out = run1("size_filter", d, min_side=0.05, max_aspect=10, max_area=0.9)
    # tiny (side 1 < 5), thin (aspect 18) and big (area 1.0 > 0.9) go; class 1 is empty ->
    # fallback keeps its top positive-area box (tiny)
    assert rows(out) == rows(dets([tiny, A], [0.9, 0.6], [1, 2]))
    out = run1("size_filter", d, min_side=0.05, max_aspect=10, max_area=0.9, keep_top1=False)
    assert rows(out) == rows(dets([A], [0.6], [2]))


def test_size_filter_clips_and_drops_degenerate_boxes():
    d = dets([[-10, -10, 50, 150], [30, 30, 30, 60]], [0.9, 0.95], [1, 1])
    out = run1("size_filter", d, width=100, height=100)
    assert rows(out) == rows(dets([[0, 0, 50, 100]], [0.9], [1]))


def test_nms_classwise_and_identical_boxes():
    near = [1, 1, 51, 51]
    d = dets([A, near, A, B], [0.9, 0.8, 0.7, 0.6], [1, 1, 2, 1])
    out = run1("nms", d, thr=0.5)
    assert rows(out) == rows(dets([A, A, B], [0.9, 0.7, 0.6], [1, 2, 1]))
    out = run1("nms", dets([A, A], [0.5, 0.5], [1, 1]))
    assert len(out["scores"]) == 1


def test_wbf_fuses_with_score_weights():
    a = [0, 0, 10, 10]
    b = [2, 0, 12, 10]  # IoU with a = 80/120 = 0.667
    c = [50, 50, 60, 60]
    d = dets([a, b, c], [0.75, 0.25, 0.5], [1, 1, 1])
    out = run1("wbf", d, thr=0.55)
    assert len(out["scores"]) == 2
    fused = out["bboxes"][np.argmax(out["scores"])]
    np.testing.assert_allclose(fused, [0.5, 0, 10.5, 10])  # 0.75*a + 0.25*b
    np.testing.assert_allclose(sorted(out["scores"]), [0.5, 0.75])
    out = run1("wbf", d, thr=0.55, score="mean")
    np.testing.assert_allclose(sorted(out["scores"]), [0.5, 0.5])
    # identical boxes fuse into that box
    out = run1("wbf", dets([a, a], [0.3, 0.3], [1, 1]))
    np.testing.assert_allclose(out["bboxes"], [a])


def test_weight_modes():
    d = dets([A, B, PART], [0.2, 0.6, 0.4], [1, 1, 2])
    np.testing.assert_allclose(run1("weight", d)["weights"], [0.1, 1.0, 0.5])
    np.testing.assert_allclose(
        run1("weight", d, mode="score", min_weight=0)["weights"], [0.2, 0.6, 0.4]
    )
    np.testing.assert_allclose(run1("weight", d, mode="one")["weights"], [1, 1, 1])


def test_image_filter_drops_whole_images_with_an_unfound_class():
    d = dets([A, B, PART], [0.5, 0.1, 0.9], [1, 2, 1])
    # class 2's best box scores 0.1 < 0.2: the whole image goes, class 1's boxes too
    assert len(run1("image_filter", d, min_score=0.2)["scores"]) == 0
    assert rows(run1("image_filter", d, min_score=0.1)) == rows(d)
    # a labelled class without any box drops the image even at min_score 0
    assert len(run1("image_filter", d, image_labels=[1, 3])["scores"]) == 0
    assert rows(run1("image_filter", d, image_labels=[1])) == rows(d)


def test_image_filter_in_a_batch_drops_only_the_bad_images():
    per_image = {5: dets([A, B], [0.9, 0.3], [1, 2]), 6: dets([A, B], [0.9, 0.05], [1, 2])}
    images = [{"id": i, "width": 100, "height": 100, "labels": [1, 2]} for i in (5, 6)]
    chain = build_chain([dict(type="top1"), dict(type="image_filter", min_score=0.2)])
    out = denoise_images(per_image, images, chain)
    assert rows(out[5]) == rows(per_image[5]) and len(out[6]["scores"]) == 0


def test_inner_box_moves_the_top_box_onto_a_confident_box_inside_it():
    big, inner, outside = [0, 0, 80, 80], [10, 10, 40, 40], [85, 85, 99, 99]
    d = dets([big, inner, outside, B], [0.9, 0.72, 0.8, 0.5], [1, 1, 1, 2])
    out = run1("inner_box", d, rel_score=0.7, max_area=0.5, inside=0.8)
    # class 1's top box takes the inner box's place and keeps its score; the inner box is gone;
    # the box outside the top box and class 2 are untouched
    assert rows(out) == rows(dets([inner, outside, B], [0.9, 0.8, 0.5], [1, 1, 2]))
    # each condition alone blocks the move
    for params in (
        dict(rel_score=0.9, max_area=0.5, inside=0.8),  # 0.72 < 0.9 x 0.9
        dict(rel_score=0.7, max_area=0.1, inside=0.8),  # area 900 > 0.1 x 6400
    ):
        assert rows(run1("inner_box", d, **params)) == rows(d)
    shifted = dets([big, [60, 60, 100, 100]], [0.9, 0.8], [1, 1])  # 1/4 of it is inside
    assert rows(run1("inner_box", shifted, inside=0.8)) == rows(shifted)
    assert rows(run1("inner_box", shifted, inside=0.25)) == rows(
        dets([[60, 60, 100, 100]], [0.9], [1])
    )
    with pytest.raises(ValueError, match="rel_score"):
        run1("inner_box", d, rel_score=1.5)


def test_inner_box_takes_the_best_candidate_then_top1_keeps_it():
    big, c1, c2 = [0, 0, 80, 80], [0, 0, 30, 30], [40, 40, 70, 70]
    d = dets([c1, big, c2], [0.75, 0.9, 0.8], [1, 1, 1])
    chain = build_chain([dict(type="inner_box"), dict(type="top1")])
    out = apply_chain(d, chain, image_labels=[1], width=100, height=100)
    assert rows(out) == rows(dets([c2], [0.9], [1]))  # c2 outscores c1


def ignore_rows(d):
    keep = d["ignore"] == 1
    return rows({k: d[k][keep] for k in ("labels", "scores", "bboxes")})


def test_ignore_regions_keeps_other_confident_boxes_off_the_pseudo_boxes():
    far = [60, 0, 95, 30]  # class 1, 0.6 >= 0.5 x 0.9: a region
    weak = [60, 40, 95, 55]  # class 1, 0.3 < 0.45: not a region
    over = [10, 10, 60, 60]  # class 2, holds 64 % of A (> max_overlap 0.3): dropped
    near = [0, 60, 40, 100]  # class 2, off A and B: a region
    d = dets([A, far, weak, over, near, B], [0.9, 0.6, 0.3, 0.8, 0.7, 0.95], [1, 1, 1, 2, 2, 2])
    chain = build_chain([dict(type="top1"), dict(type="ignore_regions", rel_score=0.5)])
    out = apply_chain(d, chain, image_labels=[1, 2], width=100, height=100)
    pseudo = {k: out[k][out["ignore"] == 0] for k in ("labels", "scores", "bboxes")}
    assert rows(pseudo) == rows(dets([A, B], [0.9, 0.95], [1, 2]))
    assert ignore_rows(out) == rows(dets([far, near], [0.6, 0.7], [1, 2]))
    # a looser overlap limit keeps the class-2 box over A; rel_score 1 keeps no region
    loose = build_chain([dict(type="top1"), dict(type="ignore_regions", max_overlap=0.7)])
    out = apply_chain(d, loose, image_labels=[1, 2], width=100, height=100)
    assert ignore_rows(out) == rows(dets([far, over, near], [0.6, 0.8, 0.7], [1, 2, 2]))
    strict = build_chain([dict(type="top1"), dict(type="ignore_regions", rel_score=1.0)])
    out = apply_chain(d, strict, image_labels=[1, 2], width=100, height=100)
    assert out["ignore"].tolist() == [0, 0]


def test_ignore_regions_only_in_images_that_keep_a_pseudo_box_and_last_in_the_chain():
    per_image = {
        5: dets([A, B], [0.9, 0.8], [1, 1]),
        6: dets([A, B], [0.1, 0.09], [1, 1]),  # dropped by the image filter
    }
    images = [{"id": i, "width": 100, "height": 100, "labels": [1]} for i in (5, 6)]
    chain = build_chain(
        [
            dict(type="top1"),
            dict(type="image_filter", min_score=0.2),
            dict(type="ignore_regions"),
        ]
    )
    out = denoise_images(per_image, images, chain)
    assert out[5]["ignore"].tolist() == [0, 1] and len(out[6]["scores"]) == 0
    with pytest.raises(ValueError, match="must be the last"):
        build_chain([dict(type="ignore_regions"), dict(type="top1")])
    with pytest.raises(ValueError, match="unknown parameters"):
        build_chain([dict(type="ignore_regions", source=None)])
    with pytest.raises(ValueError, match="rel_score"):
        denoise_images(per_image, images, build_chain([dict(type="ignore_regions", rel_score=0)]))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_handles_an_empty_image(name):
    extra = {"source": dets(np.zeros((0, 4)), [], [])} if name == "ignore_regions" else {}
    out = run1(name, dets(np.zeros((0, 4)), [], []), **extra)
    assert len(out["scores"]) == 0 and out["bboxes"].shape == (0, 4)


def test_no_detection_for_a_labelled_class_invents_nothing():
    chain = build_chain([dict(type="score_threshold", thr=0.9), dict(type="size_filter")])
    out = apply_chain(dets([A], [0.1], [1]), chain, image_labels=[1, 2], width=100, height=100)
    assert out["labels"].tolist() == [1]  # class 2 had no detection: still none


def test_chain_inserts_label_consistency_and_rejects_misplaced_one():
    chain = build_chain([dict(type="top1")])
    assert [s[0] for s in chain] == ["label_consistency", "top1"]
    with pytest.raises(ValueError, match="first"):
        build_chain([dict(type="top1"), dict(type="label_consistency")])
    with pytest.raises(KeyError, match="unknown de-noise strategy"):
        build_chain([dict(type="nope")])
    with pytest.raises(ValueError, match="unknown parameters"):
        build_chain([dict(type="top1", k=3)])


def test_batch_equals_image_by_image():
    rng = np.random.default_rng(0)
    images, per_image = [], {}
    for i in range(30):
        n = int(rng.integers(0, 25))
        xy = rng.uniform(0, 80, (n, 2))
        wh = rng.uniform(2, 40, (n, 2))
        per_image[i + 7] = dets(
            np.c_[xy, xy + wh], rng.uniform(0, 1, n).round(2), rng.integers(1, 4, n)
        )
        images.append(
            {
                "id": i + 7,
                "width": 120,
                "height": 100,
                "labels": sorted(set(rng.integers(1, 4, 2).tolist())),
            }
        )
    cfgs = [
        [dict(type="containment", thr=0.6), dict(type="nms", thr=0.3)],
        [dict(type="mist", p=0.5, thr=0.2), dict(type="weight")],
        [dict(type="size_filter", min_side=0.1), dict(type="wbf", thr=0.3)],
        [dict(type="minmax_normalize"), dict(type="score_threshold", thr=0.7)],
        [dict(type="top1"), dict(type="image_filter", min_score=0.5)],
        [dict(type="top1"), dict(type="ignore_regions", rel_score=0.3, max_overlap=0.2)],
        [dict(type="inner_box", rel_score=0.5, max_area=0.6, inside=0.7), dict(type="top1")],
        [dict(type="image_filter", min_score=0.3), dict(type="pgf", keep_thr=0.4)],
        [dict(type="pgf", keep_thr=0.6, contain_thr=0.5, exempt=[2])],
        [dict(type="minmax_normalize", per_class=True), dict(type="pgf", keep_thr=0.5)],
    ]
    for cfg in cfgs:
        chain = build_chain(cfg)
        batch = denoise_images(per_image, images, chain)
        for im in images:
            one = apply_chain(
                per_image[im["id"]],
                chain,
                image_labels=im["labels"],
                width=im["width"],
                height=im["height"],
            )
            assert rows(batch[im["id"]]) == rows(one), cfg
            for k in ("weights", "raw_scores", "ignore"):
                if k in one:
                    np.testing.assert_allclose(batch[im["id"]][k], one[k])
