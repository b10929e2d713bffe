"""CAM head: box scores on a hand-made activation map, classifier learning, predict shapes, and
the scoring / refine options it refuses."""

from __future__ import annotations

import pytest
import torch

from wsod.models.roi_heads.cam_head import WSODCAMHead
from wsod.models.roi_heads.cam_scoring import box_sums, cam_box_scores


def test_box_sums_match_direct_sums():
    torch.manual_seed(0)
    maps = torch.rand(2, 9, 13)
    integral = torch.nn.functional.pad(maps.cumsum(1).cumsum(2), (1, 0, 1, 0))
    boxes = torch.tensor([[0, 0, 13, 9], [2, 3, 7, 8], [5, 1, 6, 2], [20, 20, 30, 30]]).float()
    sums = box_sums(integral, boxes)
    assert sums.shape == (4, 2)
    assert torch.allclose(sums[0], maps.sum((1, 2)))
    assert torch.allclose(sums[1], maps[:, 3:8, 2:7].sum((1, 2)))
    assert torch.allclose(sums[2], maps[:, 1, 5])
    assert torch.all(sums[3] == 0)  # outside the map


def test_cam_box_scores_hand_made():
    cam = torch.zeros(1, 10, 10)
    cam[0, 2:6, 3:7] = 1.0  # a 4x4 blob: mass 16 in 100 pixels
    boxes = torch.tensor(
        [
            [3.0, 2.0, 7.0, 6.0],  # exact: 1 - 16/100 = 0.84
            [0.0, 0.0, 10.0, 10.0],  # whole image: 1 - 1 = 0
            [3.0, 2.0, 5.0, 4.0],  # a quarter of the blob: 0.25 - 0.04 = 0.21
            [7.0, 7.0, 10.0, 10.0],  # background: 0
        ]
    )
    s = cam_box_scores(cam, boxes)[:, 0]
    assert torch.allclose(s, torch.tensor([0.84, 0.0, 0.21, 0.0]), atol=1e-5)
    # thresholded at 0.5: (inside - 0.5 x area) / (16 x 0.5)
    t = cam_box_scores(cam, boxes, mode="thresholded", thr=0.5)[:, 0]
    expected = torch.tensor([(16 - 8) / 8, 0.0, (4 - 2) / 8, 0.0])  # whole image: 16 - 50 < 0
    assert torch.allclose(t, expected, atol=1e-5)


def test_area_weight_prefers_tighter_boxes():
    cam = torch.zeros(1, 10, 10)
    cam[0, 2:6, 3:7] = 1.0  # the 4x4 blob: mass 16
    cam[0, 2:6, 7:9] = 0.2  # a faint margin to its right: mass 1.6
    boxes = torch.tensor([[3.0, 2.0, 7.0, 6.0], [3.0, 2.0, 9.0, 6.0]])  # blob, blob + margin
    total = 16 + 1.6
    plain = cam_box_scores(cam, boxes)[:, 0]
    assert torch.allclose(plain, torch.tensor([16 / total - 0.16, 1 - 0.24]), atol=1e-5)
    assert plain.argmax() == 1  # a = 1: the margin's mass is worth its area
    tight = cam_box_scores(cam, boxes, area_weight=2.0)[:, 0]
    assert torch.allclose(tight, torch.tensor([16 / total - 0.32, 1 - 0.48]), atol=1e-5)
    assert tight.argmax() == 0  # a = 2: it is not


def test_classifier_learns_and_predicts():
    torch.manual_seed(0)
    head = WSODCAMHead(
        num_classes=3, in_channels=4, featmap_stride=8, upsample=2, test_cfg=dict(score_thr=0.0)
    )
    feats = (torch.randn(2, 4, 6, 8),)
    labels = [[0], [1, 2]]
    opt = torch.optim.Adam(head.parameters(), lr=0.1)
    losses = []
    for _ in range(30):
        loss = head.loss(feats, [], [], labels)["loss_cls"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    head.eval()
    boxes = [torch.tensor([[0.0, 0.0, 64.0, 48.0], [8.0, 8.0, 40.0, 40.0]])] * 2
    metas = [dict(img_shape=(48, 64), ori_shape=(24, 32), scale_factor=(2.0, 2.0))] * 2
    with torch.no_grad():
        scores = head.proposal_class_scores(feats, boxes, None, metas)
        res = head.predict(feats, boxes, [None, None], metas)
    assert [tuple(x.shape) for x in scores] == [(2, 3), (2, 3)]
    assert all(torch.all(x >= 0) for x in scores)
    assert torch.all(scores[0][0] == 0)  # the whole image holds all mass and all area
    assert len(res) == 2
    for r, sc in zip(res, scores, strict=True):
        assert len(r) == int((sc > 0).sum())  # every positive (box, class) survives NMS here
        assert r.bboxes.shape == (len(r), 4)
        assert len(r) == 0 or r.bboxes[:, 2].max() <= 32  # rescaled to the 32x24 original


def test_image_mode_scores_every_box_with_the_class_probability():
    torch.manual_seed(0)
    head = WSODCAMHead(num_classes=3, in_channels=4, featmap_stride=8, upsample=2)
    head.eval()
    feats = (torch.randn(2, 4, 6, 8),)
    boxes = [torch.tensor([[0.0, 0.0, 64.0, 48.0], [8.0, 8.0, 20.0, 20.0]])] * 2
    metas = [dict(img_shape=(48, 64), ori_shape=(48, 64), scale_factor=(1.0, 1.0))] * 2
    with torch.no_grad():
        probs = torch.sigmoid(head(feats).mean(dim=(2, 3)))
        default = head.proposal_class_scores(feats, boxes, None, metas)
        head.scoring = {"type": "image"}
        image = head.proposal_class_scores(feats, boxes, None, metas)
    for i in range(2):
        torch.testing.assert_close(image[i], probs[i].expand(2, 3))
        assert torch.all(default[i] <= image[i])  # box scores are <= 1 times the probability
    assert not torch.allclose(default[0], image[0])


def test_thresholded_prefers_the_box_of_the_region_above_threshold():
    cam = torch.zeros(1, 20, 20)
    cam[0, 5:15, 5:15] = 0.3  # a weak body ...
    cam[0, 8:10, 8:10] = 1.0  # ... around a peak (the discriminative part)
    boxes = torch.tensor([[8.0, 8.0, 10.0, 10.0], [5.0, 5.0, 15.0, 15.0], [0.0, 0.0, 20.0, 20.0]])
    s = cam_box_scores(cam, boxes, mode="thresholded", thr=0.2)[:, 0]
    assert s.argmax() == 1  # the whole object, not its peak nor the image
    assert torch.allclose(s[1], torch.tensor(1.0))


def test_dilated_mobilenet_last_stage_keeps_stride_16():
    from wsod.models.backbones.tv_mobilenet_v2 import WSODMobileNetV2

    x = torch.randn(1, 3, 64, 96)
    plain = WSODMobileNetV2(out_indices=(3, 4)).eval()
    dilated = WSODMobileNetV2(out_indices=(3, 4), dilate_last=True).eval()
    dilated.load_state_dict(plain.state_dict())  # same weights, same names
    with torch.no_grad():
        p3, p4 = plain(x)
        d3, d4 = dilated(x)
    assert p4.shape[-2:] == (2, 3) and d4.shape[-2:] == (4, 6) == d3.shape[-2:]
    assert torch.equal(p3, d3)
    assert d4.shape[1] == p4.shape[1] == 1280


def test_proposal_scores_localise_in_input_pixels():
    """One active feature cell must select the proposal over the input region it sees."""
    head = WSODCAMHead(
        num_classes=1,
        in_channels=1,
        featmap_stride=16,
        upsample=2,
        scoring=dict(type="thresholded", thr=0.5),
    )
    with torch.no_grad():
        head.fc_cls.weight.fill_(1.0)
        head.fc_cls.bias.zero_()
    feats = torch.zeros(1, 1, 6, 8)  # input 96x128 (stride 16)
    feats[0, 0, 4, 6] = 10.0  # the cell over input pixels x 96-112, y 64-80
    boxes = torch.tensor(
        [
            [96.0, 64.0, 112.0, 80.0],  # the cell's region
            [0.0, 0.0, 16.0, 16.0],  # top-left corner
            [48.0, 32.0, 56.0, 40.0],  # the same cell if boxes were mapped at half scale
        ]
    )
    metas = [dict(img_shape=(96, 128))]
    scores = head.proposal_class_scores((feats,), [boxes], None, metas)[0][:, 0]
    assert scores.argmax() == 0 and scores[0] > 0.4  # bilinear upsampling spreads the cell
    assert scores[1] == 0 and scores[2] == 0


def test_options_are_checked_by_type():
    """``scoring`` and ``refine`` refuse keys their type does not read, removed types and the
    old ``refine.source``, each naming the fix; ``image`` reads no key and ignores any."""
    head = WSODCAMHead(num_classes=2, scoring=dict(type="thresholded", thr=0.3))
    assert head.scoring == {"type": "thresholded", "thr": 0.3}
    assert WSODCAMHead(num_classes=2).scoring == {"type": "mass_minus_area", "area_weight": 1.0}
    image = WSODCAMHead(num_classes=2, scoring=dict(type="image", thr=0.3))
    assert image.scoring == {"type": "image"}
    with pytest.raises(ValueError, match="does not read.*area_weight"):
        WSODCAMHead(num_classes=2, scoring=dict(type="thresholded", area_weight=0.7))
    with pytest.raises(ValueError, match="context.*removed"):
        WSODCAMHead(num_classes=2, scoring=dict(type="context"))
    with pytest.raises(ValueError, match="refine.type"):
        WSODCAMHead(num_classes=2, refine=dict(iters=5))
    with pytest.raises(ValueError, match="chosen by refine.type"):
        WSODCAMHead(num_classes=2, refine=dict(source="colour", iters=5))
    with pytest.raises(ValueError, match="does not read.*beta"):
        WSODCAMHead(num_classes=2, refine=dict(type="colour", beta=8.0))
    with pytest.raises(ValueError, match="needs the affinity branch"):
        WSODCAMHead(num_classes=2, refine=dict(type="learned", iters=5))
