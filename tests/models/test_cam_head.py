"""CAM head: box scores on a hand-made activation map, classifier learning, predict shapes."""

from __future__ import annotations

import pytest
import torch

from wsod.models.roi_heads.cam_head import WSODCAMHead, box_sums, cam_box_scores, cam_zones


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
    m = cam_box_scores(cam, boxes, mode="mean_in_out")[:, 0]
    assert m[0] == 1.0 and m.argmax() in (0, 2) and m[3] == 0
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


def test_power_sharpens_towards_the_peak():
    cam = torch.zeros(1, 10, 10)
    cam[0, 2:6, 3:7] = 1.0  # the blob
    cam[0, 2:6, 7:9] = 0.3  # a halo to its right
    boxes = torch.tensor([[3.0, 2.0, 7.0, 6.0], [3.0, 2.0, 9.0, 6.0]])  # blob, blob + halo
    assert cam_box_scores(cam, boxes, area_weight=0.5)[:, 0].argmax() == 1
    sharp = cam_box_scores(cam, boxes, area_weight=0.5, power=3.0)[:, 0]  # halo 0.3 -> 0.027
    total = 16 + 8 * 0.3**3
    assert torch.allclose(sharp, torch.tensor([16 / total - 0.08, 1 - 0.12]), atol=1e-5)
    assert sharp.argmax() == 0


def test_zones_score_each_region_alone():
    cam = torch.zeros(1, 20, 40)
    cam[0, 5:15, 3:13] = 1.0  # two separate regions, mass 100 each
    cam[0, 5:15, 27:37] = 1.0
    cam[0, 0, 0] = 0.9  # a speck: too little mass to form a zone
    boxes = torch.tensor([[3.0, 5, 13, 15], [27, 5, 37, 15], [3, 5, 37, 15]])  # one, other, both
    zones = cam_zones(cam[0], 0.1)
    assert zones is not None and zones.unique().tolist() == [0, 1]
    assert zones[10, 5] != zones[10, 30] and zones[0, 0] == zones[10, 5]  # nearest region
    plain = cam_box_scores(cam, boxes)[:, 0]
    assert plain.argmax() == 2  # together they hold all the mass
    split = cam_box_scores(cam, boxes, split_zones=True)[:, 0]
    total, area = 200.9, 800.0
    expected = [100 / total - 100 / area, 100 / total - 100 / area, 100 / total - 340 / area]
    assert torch.allclose(split, torch.tensor(expected).clamp(min=0), atol=1e-5)
    assert split.argmax() in (0, 1)
    one = torch.zeros(1, 20, 40)
    one[0, 5:15, 3:13] = 1.0  # a single region: nothing to split, scores unchanged
    assert cam_zones(one[0], 0.1) is None
    assert torch.equal(cam_box_scores(one, boxes, split_zones=True), cam_box_scores(one, boxes))


def test_context_prefers_one_instance_over_two_and_over_a_part():
    cam = torch.zeros(1, 30, 60)
    cam[0, 10:20, 5:15] = 1.0  # two separate instances
    cam[0, 10:20, 40:50] = 1.0
    boxes = torch.tensor(
        [
            [5.0, 10, 15, 20],  # one instance, tight
            [5, 10, 50, 20],  # both and the dark gap between them
            [7, 12, 13, 18],  # a part: the rest of the object lies in its frame
            [0, 0, 60, 30],  # the whole image: frame outside the image counts as dark
        ]
    )
    s = cam_box_scores(cam, boxes, mode="context", context_ratio=2.0)[:, 0]
    # tight box: inside mean 1, frame 20 x 20 - 100 = 300 pixels of which none is active
    assert torch.isclose(s[0], torch.tensor(1.0))
    # both: inside 200 / 450; frame 90 x 20 - 450 = 1350 pixels, all inside the image dark
    assert torch.isclose(s[1], torch.tensor(200 / 450))
    # part: inside 1; frame 12 x 12 box minus 36 = 108 pixels, 100 - 36 = 64 of them active
    assert torch.isclose(s[2], torch.tensor(1 - 64 / 108))
    # whole image: inside 200 / 1800, frame (120 x 60 - 1800) outside the image: 0
    assert torch.isclose(s[3], torch.tensor(200 / 1800))
    assert s.argmax() == 0
    # mass - area (the default) takes in both instances instead
    assert cam_box_scores(cam, boxes)[:, 0].argmax() == 1


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
        head.score_mode = "image"
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
        score_mode="thresholded",
        cam_thr=0.5,
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


def test_context_mass_prefers_the_object_over_its_peak():
    cam = torch.zeros(1, 30, 30)
    cam[0, 10:20, 10:20] = 0.3  # an object ...
    cam[0, 14:17, 14:17] = 1.0  # ... with a strong peak
    boxes = torch.tensor([[14.0, 14, 17, 17], [10, 10, 20, 20]])  # the peak, the object
    alone = cam_box_scores(cam, boxes, mode="context", context_ratio=2.0)[:, 0]
    # peak: inside 1, frame 6 x 6 - 9 = 27 pixels at 0.3; object: inside 36.3 / 100, frame dark
    assert torch.allclose(alone, torch.tensor([0.7, 0.363]), atol=1e-5)
    mass = cam_box_scores(cam, boxes, mode="context", context_ratio=2.0, context_mass=2.0)[:, 0]
    total = 9 + 91 * 0.3
    expected = torch.tensor([0.7 * (9 / total) ** 2, 0.363])
    assert torch.allclose(mass, expected, atol=1e-5) and mass.argmax() == 1


def test_head_context_mode_picks_one_of_two_instances():
    """Through the head (input pixels, upsampled CAM): two active cells far apart; the box
    around one beats the box around both, which the default score prefers."""
    feats = torch.zeros(1, 1, 6, 12)  # input 96x192 (stride 16)
    feats[0, 0, 2, 2] = 10.0  # input x 32-48, y 32-48
    feats[0, 0, 2, 9] = 10.0  # input x 144-160, y 32-48
    boxes = torch.tensor([[24.0, 24.0, 56.0, 56.0], [24.0, 24.0, 168.0, 56.0]])
    metas = [dict(img_shape=(96, 192))]

    def scores(**kw):
        head = WSODCAMHead(num_classes=1, in_channels=1, featmap_stride=16, upsample=2, **kw)
        with torch.no_grad():
            head.fc_cls.weight.fill_(1.0)
            head.fc_cls.bias.zero_()
        return head.proposal_class_scores((feats,), [boxes], None, metas)[0][:, 0]

    assert scores().argmax() == 1  # mass - area: both instances in one box
    ctx = scores(score_mode="context", context_ratio=2.0)
    assert ctx.argmax() == 0 and ctx[0] > 2 * ctx[1]


def test_thresholded_zones_box_one_instance_not_both():
    cam = torch.zeros(1, 20, 40)
    cam[0, 5:15, 3:13] = 1.0  # two separate instances, 100 pixels each
    cam[0, 5:15, 27:37] = 0.8
    boxes = torch.tensor([[3.0, 5, 13, 15], [27, 5, 37, 15], [3, 5, 37, 15]])  # one, other, both
    plain = cam_box_scores(cam, boxes, "thresholded", thr=0.3)[:, 0]
    assert plain.argmax() == 2  # the box around both holds all the mass above t
    split = cam_box_scores(cam, boxes, "thresholded", thr=0.3, split_zones=True)[:, 0]
    # against its own zone each single box is exact (1); the box around both pays 0.3 for every
    # pixel of the other zone (its instance included) and for the gap
    assert split[0] == pytest.approx(1.0) and split[1] == pytest.approx(1.0)
    assert (70 - 0.3 * (340 - 100)) / 70 < 0 and split[2] == 0  # (best zone: the first)
    one = cam[:, :, :20]  # a single instance: unchanged
    assert torch.equal(
        cam_box_scores(one, boxes, "thresholded", thr=0.3, split_zones=True),
        cam_box_scores(one, boxes, "thresholded", thr=0.3),
    )


def test_thresholded_zones_from_a_higher_threshold_split_touching_instances():
    cam = torch.zeros(1, 20, 40)
    cam[0, 5:15, 5:35] = 0.5  # two instances touching: one region above t = 0.3 ...
    cam[0, 7:13, 8:16] = 1.0  # ... with separate cores
    cam[0, 7:13, 24:32] = 0.9
    boxes = torch.tensor([[5.0, 5, 20, 15], [20, 5, 35, 15], [5, 5, 35, 15]])  # left, right, both
    same = cam_box_scores(cam, boxes, "thresholded", thr=0.3, split_zones=True)[:, 0]
    assert same.argmax() == 2  # zones from t: one region, nothing split
    split = cam_box_scores(cam, boxes, "thresholded", thr=0.3, split_zones=True, zone_thr=0.8)
    assert split[:, 0].argmax() in (0, 1) and split[2, 0] < split[:2, 0].min()
