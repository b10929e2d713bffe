"""Property tests of the box math (``wsod.utils.boxes``) and the COCO <-> code box converters
(``wsod.contracts.xywh_to_xyxy`` / ``xyxy_to_xywh``), on boxes that hypothesis generates.

The reference for IoU is mmdet's own ``bbox_overlaps`` (torch), an implementation we do not
share code with; the other properties (symmetry, range, identity, invariance to a common shift
and scale) hold for any correct IoU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from wsod.contracts import xywh_to_xyxy, xyxy_to_xywh
from wsod.utils.boxes import box_area, box_intersection, box_iou

COORD = st.floats(min_value=0, max_value=2000, allow_nan=False, width=32)
SIZE = st.floats(min_value=0, max_value=800, allow_nan=False, width=32)


@st.composite
def boxes_xyxy(
    draw: st.DrawFn, min_size: int = 0, max_size: int = 8, min_side: float = 0.0
) -> np.ndarray:
    """(N,4) float64 x1y1x2y2 boxes with x2 >= x1 and y2 >= y1 (empty boxes included unless
    ``min_side`` > 0: each side at least that long)."""
    n = draw(st.integers(min_size, max_size))
    side = SIZE if min_side == 0 else st.floats(min_side, 800, allow_nan=False, width=32)
    rows = [
        [x, y, x + w, y + h]
        for x, y, w, h in draw(
            st.lists(st.tuples(COORD, COORD, side, side), min_size=n, max_size=n)
        )
    ]
    return np.asarray(rows, dtype=np.float64).reshape(-1, 4)


@given(boxes_xyxy())
def test_xyxy_xywh_round_trip(boxes: np.ndarray) -> None:
    xywh = xyxy_to_xywh(boxes)
    assert xywh.shape == boxes.shape and (xywh[:, 2:] >= 0).all()
    np.testing.assert_allclose(xywh_to_xyxy(xywh), boxes, rtol=0, atol=1e-9)
    np.testing.assert_allclose(xywh[:, 2] * xywh[:, 3], box_area(boxes), rtol=1e-12, atol=1e-9)


@given(boxes_xyxy(), boxes_xyxy())
def test_iou_is_symmetric_and_within_unit_interval(a: np.ndarray, b: np.ndarray) -> None:
    iou = box_iou(a, b)
    assert iou.shape == (len(a), len(b))
    assert ((iou >= 0) & (iou <= 1 + 1e-12)).all()
    np.testing.assert_allclose(iou, box_iou(b, a).T, rtol=0, atol=1e-12)
    inter = box_intersection(a, b)
    assert (inter <= np.minimum(box_area(a)[:, None], box_area(b)[None, :]) + 1e-6).all()


@given(boxes_xyxy(min_size=1))
def test_iou_of_a_box_with_itself_is_one(a: np.ndarray) -> None:
    iou = np.diag(box_iou(a, a))
    positive = box_area(a) > 0
    np.testing.assert_allclose(iou[positive], 1.0, rtol=0, atol=1e-9)
    assert (iou[~positive] == 0).all()  # an empty box overlaps nothing, not even itself


@given(  # sides of at least 1/64 px: a side of 1e-16 vanishes in x + shift (floats, not IoU)
    boxes_xyxy(min_size=1, min_side=0.015625),
    boxes_xyxy(min_size=1, min_side=0.015625),
    st.floats(-500, 500, allow_nan=False),
    st.floats(0.25, 4, allow_nan=False),
)
def test_iou_is_invariant_to_a_common_shift_and_scale(
    a: np.ndarray, b: np.ndarray, shift: float, scale: float
) -> None:
    moved = box_iou(a * scale + shift, b * scale + shift)
    np.testing.assert_allclose(moved, box_iou(a, b), rtol=1e-6, atol=1e-6)


@given(boxes_xyxy(min_size=1), boxes_xyxy(min_size=1))
def test_iou_equals_mmdet_bbox_overlaps(a: np.ndarray, b: np.ndarray) -> None:
    from mmdet.structures.bbox import bbox_overlaps

    ref = bbox_overlaps(torch.from_numpy(a), torch.from_numpy(b), mode="iou", eps=1e-12).numpy()
    ours = box_iou(a, b)
    # mmdet divides by max(union, eps): the two differ only where the union is empty
    nonempty = (box_area(a)[:, None] + box_area(b)[None, :]) > 1e-6
    np.testing.assert_allclose(ours[nonempty], ref[nonempty], rtol=1e-9, atol=1e-9)


def test_iou_of_hand_boxes() -> None:
    """One example with the arithmetic written out, as a reading aid for the properties."""
    a = np.array([[0, 0, 10, 10]], np.float64)  # area 100
    b = np.array([[5, 0, 15, 10]], np.float64)  # area 100, overlap 5 x 10 = 50
    assert box_iou(a, b)[0, 0] == pytest.approx(50 / 150)
