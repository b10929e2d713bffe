"""Selective search and EdgeBoxes on real VOC images: boxes in the image, deterministic, and
covering a known object (the car of VOC 000012: 1-based box 156,97,351,270)."""

from __future__ import annotations

import numpy as np

from wsod.proposals.edge_boxes import edge_boxes, sobel_edges
from wsod.proposals.image import read_image, resize_max_side
from wsod.proposals.postprocess import postprocess
from wsod.proposals.selective_search import image_seed, selective_search
from wsod.utils.boxes import box_iou

CAR_000012 = np.array([[155.0, 96.0, 351.0, 270.0]])  # 0-based continuous corners


def test_resize_max_side_never_enlarges(voc_root):
    img = read_image(voc_root / "JPEGImages" / "000012.jpg")
    assert img.shape == (333, 500, 3)
    small, scale = resize_max_side(img, 250)
    assert small.shape[:2] == (166, 250) and abs(scale - 0.5) < 1e-9
    same, one = resize_max_side(img, 1000)
    assert same is img and one == 1.0


def test_selective_search_real_image_deterministic_and_recalls_the_car(voc_root):
    img = read_image(voc_root / "JPEGImages" / "000012.jpg")
    seed = image_seed(0, "JPEGImages/000012.jpg")
    b1, s1 = selective_search(img, "fast", resize=250, seed=seed)
    b2, s2 = selective_search(img, "fast", resize=250, seed=seed)
    np.testing.assert_array_equal(b1, b2)  # same seed -> same boxes in the same order
    np.testing.assert_array_equal(s1, s2)
    assert len(b1) > 100 and np.all(np.diff(s1) < 0)
    # boxes were found on a half-size copy and scaled back: they span the full image
    assert b1[:, 2].max() > 400 and b1[:, 3].max() > 250
    bb, ss = postprocess(b1, s1, 500, 333, min_size=8, max_boxes=2000)
    assert bb[:, 2].max() <= 500 and bb[:, 3].max() <= 333 and bb.min() >= 0
    assert box_iou(CAR_000012, bb).max() >= 0.7


def test_edge_boxes_sobel_fallback_real_image(voc_root):
    img = read_image(voc_root / "JPEGImages" / "000012.jpg")
    edges, orient = sobel_edges(img)
    assert edges.shape == (333, 500) and edges.dtype == np.float32
    assert 0 <= edges.min() and edges.max() <= 1 and orient.max() < np.pi + 1e-6
    assert 0.01 < (edges > 0.1).mean() < 0.3  # thinned: a minority of pixels are edges
    b, s = edge_boxes(img, None, resize=None, max_boxes=500)
    assert 100 < len(b) <= 500 and np.all(np.diff(s) <= 0)
    assert box_iou(CAR_000012, b).max() >= 0.7
