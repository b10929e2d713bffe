"""Post-processing shared by all proposal methods: clip, min size, de-duplicate, cap, order."""

from __future__ import annotations

import numpy as np
import pytest

from wsod.proposals.postprocess import postprocess, rank_scores
from wsod.proposals.sharding import parse_shard, take_shard


def test_rank_scores_descending_in_unit_interval():
    s = rank_scores(4)
    np.testing.assert_allclose(s, [1.0, 0.75, 0.5, 0.25])
    assert s.dtype == np.float32 and rank_scores(0).shape == (0,)


def test_postprocess_clip_drop_dedup_cap_and_order():
    boxes = np.array(
        [
            [-5, -5, 50, 40],  # clipped to 0,0,50,40
            [10, 10, 14, 60],  # 4 px wide: dropped (min_size 8)
            [0, 0, 50, 40],  # duplicate of the first after clipping (lower score)
            [20, 20, 120, 90],  # clipped to 20,20,100,80
            [30.2, 30.2, 60, 60],  # duplicate of the next one on a 1 px grid
            [30.0, 30.0, 60, 60],
            [95, 10, 130, 30],  # clipped to 95..100: 5 px wide -> dropped
        ],
        dtype=np.float64,
    )
    scores = np.array([0.9, 0.95, 0.5, 0.3, 0.8, 0.2, 0.99])
    b, s = postprocess(boxes, scores, width=100, height=80, min_size=8, max_boxes=None)
    assert b.dtype == np.float32 and s.dtype == np.float32
    np.testing.assert_allclose(
        b, [[0, 0, 50, 40], [30.2, 30.2, 60, 60], [20, 20, 100, 80]], rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(s, [0.9, 0.8, 0.3], rtol=0, atol=1e-6)
    b2, s2 = postprocess(boxes, scores, width=100, height=80, min_size=8, max_boxes=2)
    np.testing.assert_array_equal(b2, b[:2])
    np.testing.assert_array_equal(s2, s[:2])


def test_postprocess_without_scores_uses_rank_and_keeps_order():
    boxes = np.array([[0, 0, 20, 20], [5, 5, 30, 30], [0, 0, 20, 20]], dtype=np.float32)
    b, s = postprocess(boxes, None, 100, 100, min_size=0, max_boxes=0)
    np.testing.assert_array_equal(b, boxes[:2])
    np.testing.assert_allclose(s, [1.0, 2 / 3], rtol=1e-6)
    e_b, e_s = postprocess(np.zeros((0, 4)), np.zeros(0), 10, 10)
    assert e_b.shape == (0, 4) and e_s.shape == (0,)
    with pytest.raises(ValueError, match="scores"):
        postprocess(boxes, np.ones(2), 100, 100)


def test_shard_parsing_and_taking():
    assert parse_shard("1/3") == (1, 3) and parse_shard(None) is None
    assert take_shard(list(range(7)), (1, 3)) == [1, 4]
    parts = [take_shard(list(range(7)), (i, 3)) for i in range(3)]
    assert sorted(sum(parts, [])) == list(range(7))
    for bad in ("3/3", "a/b", "1-3"):
        with pytest.raises(ValueError, match="shard"):
            parse_shard(bad)
