"""Cross-check: our VOC AP equals mmdet 3.3.0's ``eval_map`` (``eval_mode`` pinned) on seeded
random detections with several images and classes, difficult boxes, duplicates, a class without
GT and an image without detections."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.evaluation.voc import eval_voc


def random_case(seed: int, n_img: int = 40, n_cls: int = 6) -> tuple[dict, dict]:
    """Seeded GT and detections; class ``n_cls - 1`` has detections but no GT, image 0 no
    detections. Returns (dets_by_image, gts_by_image) with 0-based class labels."""
    rng = np.random.default_rng(seed)
    gts, dets = {}, {}
    for i in range(n_img):
        k = int(rng.integers(0, 7))
        xy = rng.uniform(0, 400, (k, 2))
        wh = rng.uniform(15, 150, (k, 2))
        g = np.hstack([xy, xy + wh])
        labels = rng.integers(0, n_cls - 1, k)
        difficult = rng.random(k) < 0.2
        gts[i] = {"bboxes": g, "labels": labels, "difficult": difficult}
        boxes, scores, dlab = [], [], []
        for b, c in zip(g, labels, strict=True):
            if rng.random() < 0.75:  # a jittered hit (IoU sometimes below 0.5)
                hit = b + rng.normal(0, 0.12, 4) * np.r_[wh[0], wh[0]].mean()
                boxes.append(hit)
                scores.append(rng.random())
                dlab.append(c if rng.random() < 0.9 else rng.integers(0, n_cls))
                if rng.random() < 0.3:  # a duplicate of the same object
                    boxes.append(hit + rng.normal(0, 2, 4))
                    scores.append(rng.random())
                    dlab.append(c)
        for _ in range(int(rng.integers(0, 5))):  # background false positives
            xy0 = rng.uniform(0, 450, 2)
            boxes.append(np.r_[xy0, xy0 + rng.uniform(10, 100, 2)])
            scores.append(rng.random())
            dlab.append(rng.integers(0, n_cls))
        if i == 0 or not boxes:
            continue
        b = np.array(boxes, dtype=np.float64)
        b[:, 2:] = np.maximum(b[:, 2:], b[:, :2] + 1)
        dets[i] = {"bboxes": b, "scores": np.array(scores), "labels": np.array(dlab, np.int64)}
    return dets, gts


def to_mmdet(dets: dict, gts: dict, n_cls: int) -> tuple[list, list]:
    """Our per-image dicts -> ``eval_map``'s (det_results, annotations)."""
    det_results, annotations = [], []
    for i in sorted(gts):
        d = dets.get(i)
        per_cls = []
        for c in range(n_cls):
            if d is None:
                per_cls.append(np.zeros((0, 5), np.float32))
            else:
                m = d["labels"] == c
                per_cls.append(np.hstack([d["bboxes"][m], d["scores"][m, None]]).astype(np.float32))
        det_results.append(per_cls)
        g = gts[i]
        diff = g["difficult"]
        annotations.append(
            {
                "bboxes": g["bboxes"][~diff].astype(np.float32).reshape(-1, 4),
                "labels": g["labels"][~diff].astype(np.int64),
                "bboxes_ignore": g["bboxes"][diff].astype(np.float32).reshape(-1, 4),
                "labels_ignore": g["labels"][diff].astype(np.int64),
            }
        )
    return det_results, annotations


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["11points", "area"])
def test_equals_mmdet_eval_map(seed: int, mode: str):
    from mmdet.evaluation.functional import eval_map

    n_cls = 6
    dets, gts = random_case(seed, n_cls=n_cls)
    ours = eval_voc(dets, gts, range(n_cls))
    det_results, annotations = to_mmdet(dets, gts, n_cls)
    # eval_mode pinned explicitly; default (non-legacy) coordinates, as our convention
    mean_ap, results = eval_map(
        det_results,
        annotations,
        iou_thr=0.5,
        eval_mode=mode,
        use_legacy_coordinate=False,
        logger="silent",
        nproc=1,
    )
    assert ours["mAP"][mode] == pytest.approx(mean_ap, abs=1e-4)
    assert results[n_cls - 1]["num_gts"] == 0  # the class without GT is excluded on both sides
    for c in range(n_cls):
        assert ours["per_class"][c]["num_gt"] == results[c]["num_gts"]
        assert ours["per_class"][c]["num_dets"] == results[c]["num_dets"]
        if results[c]["num_gts"] == 0:
            continue
        assert ours["per_class"][c]["ap"][mode] == pytest.approx(float(results[c]["ap"]), abs=1e-4)
        rec = results[c]["recall"]
        assert ours["per_class"][c]["max_recall"] == pytest.approx(
            float(rec[-1]) if len(rec) else 0.0, abs=1e-6
        )
    # the case really exercises what it claims
    assert any(g["difficult"].any() for g in gts.values()) and 0 not in dets
    assert 0.05 < ours["mAP"][mode] < 0.95
