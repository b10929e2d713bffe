"""The CAM refinement by a sparse, local random walk (wsod/models/roi_heads/cam_refine.py):
the sparse walk against the dense transition matrix, the colour affinities at a boundary, and
the refined CAM of hand-made images (a halo around one object, two objects joined by a blur)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from scipy import ndimage

from wsod.models.roi_heads.cam_head import WSODCAMHead
from wsod.models.roi_heads.cam_refine import (
    colour_affinities,
    neighbours,
    propagate,
    refine_cams,
)


def dense_transition(affinities: torch.Tensor, dilations) -> torch.Tensor:
    """The (HW, HW) transition matrix of one image's affinities (borders replicated: a
    neighbour outside the image is the nearest border pixel)."""
    _, k, h, w = affinities.shape
    t = torch.zeros(h * w, h * w, dtype=torch.float64)
    offsets = [
        (dy * d, dx * d)
        for d in dilations
        for dy in (-1, 0, 1)
        for dx in (-1, 0, 1)
        if (dy, dx) != (0, 0)
    ]
    assert len(offsets) == k
    for y in range(h):
        for x in range(w):
            for n, (oy, ox) in enumerate(offsets):
                ny, nx = min(max(y + oy, 0), h - 1), min(max(x + ox, 0), w - 1)
                t[y * w + x, ny * w + nx] += float(affinities[0, n, y, x])
    return t


def test_sparse_walk_equals_the_dense_matrix_power():
    torch.manual_seed(0)
    dilations = (1, 2, 3)
    image = torch.rand(1, 3, 7, 9)
    affinities = colour_affinities(image, dilations, sigma=0.3)
    assert torch.allclose(affinities.sum(1), torch.ones(1, 7, 9), atol=1e-5)
    maps = torch.rand(1, 2, 7, 9)
    walked = propagate(maps, affinities, dilations, iters=5)
    t = dense_transition(affinities, dilations)
    dense = torch.linalg.matrix_power(t, 5) @ maps[0].reshape(2, -1).double().t()
    assert torch.allclose(walked[0].reshape(2, -1).t().double(), dense, atol=1e-5)
    assert torch.equal(propagate(maps, affinities, dilations, iters=0), maps)


def test_neighbours_order_and_replicated_border():
    x = torch.arange(12.0).view(1, 1, 3, 4)
    n = neighbours(x, (1,))[0, 0]  # (8, 3, 4)
    # pixel (1, 1) = 5: its 8 neighbours row by row
    assert n[:, 1, 1].tolist() == [0, 1, 2, 4, 6, 8, 9, 10]
    # pixel (0, 0): the rows/columns outside repeat the border
    assert n[:, 0, 0].tolist() == [0, 0, 1, 0, 1, 4, 4, 5]


def test_colour_affinities_stay_on_the_same_side_of_a_boundary():
    image = torch.zeros(1, 3, 8, 8)
    image[:, :, :, 4:] = 1.0  # left black, right white
    affinities = colour_affinities(image, (1,), sigma=0.1)
    n = neighbours(image, (1,))[0, 0]  # the neighbours' colour
    left = affinities[0, :, 3, 3]  # the last black column
    assert left[n[:, 3, 3] == 1.0].sum() < 1e-6  # nothing to the white side
    assert left[n[:, 3, 3] == 0.0].sum() == pytest.approx(1.0)


def _image_with_squares(squares, size=(64, 96)):
    image = torch.zeros(3, *size)
    for y1, x1, y2, x2 in squares:
        image[:, y1:y2, x1:x2] = 1.0
    return image


def _blurred(mask: torch.Tensor, sigma: float) -> torch.Tensor:
    return torch.from_numpy(ndimage.gaussian_filter(mask.numpy(), sigma)).float()


def test_refinement_pulls_a_halo_back_inside_the_object():
    square = (20, 30, 44, 54)
    image = _image_with_squares([square])
    inside = image[0] > 0
    cam = _blurred(inside.float(), 6.0)[None]  # a CAM blurred over the boundary
    refined = refine_cams(cam, image, dilations=(1, 2, 4, 8), iters=20)
    share = lambda m: float(m[0][inside].sum() / m[0].sum())  # noqa: E731
    assert share(refined) > share(cam)
    # thresholded at 0.2 x its maximum, the blurred map boxes the square and its halo, the
    # refined map the square alone
    box = lambda m: ndimage.find_objects((m[0] > 0.2 * m[0].max()).numpy().astype(int))[0]  # noqa: E731
    (ys, xs), (rys, rxs) = box(cam), box(refined)
    assert ys.start <= 20 - 4 and ys.stop >= 44 + 4 and xs.start <= 30 - 4 and xs.stop >= 54 + 4
    assert abs(rys.start - 20) <= 1 and abs(rys.stop - 44) <= 1
    assert abs(rxs.start - 30) <= 1 and abs(rxs.stop - 54) <= 1


def test_refinement_separates_two_objects_joined_by_the_blur():
    image = _image_with_squares([(20, 14, 44, 38), (20, 50, 44, 74)])  # 12 px of background
    objects = (image[0] > 0).float()
    cam = _blurred(objects, 7.0)[None]
    regions = lambda m: ndimage.label((m[0] > 0.4 * m[0].max()).numpy())[1]  # noqa: E731
    assert regions(cam) == 1  # one blob: one box around both
    refined = refine_cams(cam, image, dilations=(1, 2, 4, 8), iters=20)
    assert regions(refined) == 2  # one region, hence one box, per object


def test_head_refines_with_the_input_image_and_needs_it():
    image = _image_with_squares([(16, 16, 48, 48)], size=(64, 64))[None]
    feats = torch.zeros(1, 1, 4, 4)  # stride 16
    feats[0, 0, 1:3, 1:3] = 5.0
    feats[0, 0, 0:4, 0:4] += 1.0  # a halo over the whole image
    boxes = torch.tensor([[16.0, 16.0, 48.0, 48.0], [0.0, 0.0, 64.0, 64.0]])
    metas = [dict(img_shape=(64, 64))]

    def scores(**kw):
        head = WSODCAMHead(num_classes=1, in_channels=1, featmap_stride=16, upsample=2, **kw)
        with torch.no_grad():
            head.fc_cls.weight.fill_(1.0)
            head.fc_cls.bias.zero_()
        return head.proposal_class_scores((feats,), [boxes], None, metas, images=image)[0][:, 0]

    plain = scores()
    refined = scores(refine=dict(type="colour", iters=10, dilations=(1, 2, 4)))
    assert refined[0] > plain[0]  # more of the activation inside the object's box
    head = WSODCAMHead(num_classes=1, in_channels=1, refine=dict(type="colour", iters=2))
    with pytest.raises(ValueError, match="input images"):
        head.proposal_class_scores((feats,), [boxes], None, metas)
    with pytest.raises(ValueError, match=r"does not read \['steps'\]"):
        WSODCAMHead(num_classes=1, in_channels=1, refine=dict(type="colour", steps=2))


def test_refine_cams_shapes():
    cam = F.relu(torch.randn(4, 10, 15))
    out = refine_cams(cam, torch.rand(3, 40, 60), dilations=(1, 2), iters=3)
    assert out.shape == cam.shape and (out >= 0).all()


def test_head_refines_only_the_probable_classes():
    image = _image_with_squares([(16, 16, 48, 48)], size=(64, 64))[None]
    feats = torch.zeros(1, 2, 4, 4)
    feats[0, :, 1:3, 1:3] = 5.0
    feats[0, :, 0:4, 0:4] += 1.0
    boxes = torch.tensor([[16.0, 16.0, 48.0, 48.0], [0.0, 0.0, 64.0, 64.0]])
    head = WSODCAMHead(
        num_classes=2,
        in_channels=2,
        featmap_stride=16,
        upsample=2,
        refine=dict(type="colour", iters=10, dilations=(1, 2, 4), min_prob=0.5),
    )
    plain = WSODCAMHead(num_classes=2, in_channels=2, featmap_stride=16, upsample=2)
    with torch.no_grad():
        for h in (head, plain):
            h.fc_cls.weight.copy_(torch.eye(2)[:, :, None, None])
            h.fc_cls.bias.copy_(torch.tensor([0.0, -20.0]))  # class 1: probability ~0
    metas = [dict(img_shape=(64, 64))]
    refined = head.proposal_class_scores((feats,), [boxes], None, metas, images=image)[0]
    raw = plain.proposal_class_scores((feats,), [boxes], None, metas, images=image)[0]
    assert refined[0, 0] > raw[0, 0]  # class 0 refined
    assert torch.equal(refined[:, 1], raw[:, 1])  # class 1 below min_prob: as it was
