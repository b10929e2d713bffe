"""WSDDN head: the image-score math on a hand-made case, loss/predict shapes, and learning."""

from __future__ import annotations

import math

import pytest
import torch

from projects.mil_baselines.mil_baselines.wsddn_head import (
    WSODWSDDNHead,
    wsddn_image_scores,
    wsddn_proposal_scores,
)
from wsod.models.roi_heads.common import image_label_targets

EXTRACTOR = dict(
    type="SingleRoIExtractor",
    roi_layer=dict(type="RoIAlign", output_size=3, sampling_ratio=2),
    out_channels=4,
    featmap_strides=[8],
)


def make_head(cls=WSODWSDDNHead, **kw) -> torch.nn.Module:
    import wsod.models  # noqa: F401  (registers the WSOD modules)

    args = dict(
        num_classes=3,
        bbox_roi_extractor=EXTRACTOR,
        in_channels=4,
        roi_feat_size=3,
        fc_channels=(16, 16),
        dropout=0.0,
    )
    args.update(kw)
    return cls(**args)


def toy_batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    feats = (torch.randn(2, 4, 8, 8, generator=g),)  # stride 8 -> 64x64 input
    props = []
    for n in (12, 9):
        xy = torch.rand(n, 2, generator=g) * 40
        wh = 8 + torch.rand(n, 2, generator=g) * 20
        props.append(torch.cat([xy, xy + wh], dim=1))
    scores = [torch.rand(len(p), generator=g) for p in props]
    labels = [[0, 2], [1]]
    return feats, props, scores, labels


def test_image_scores_hand_made():
    # 2 proposals, 2 classes; cls logits give softmax rows [0.5, 0.5] and [e/(1+e), 1/(1+e)];
    # det logits give softmax over proposals [0.5, 0.5] for class 0 and [1, 0]-ish for class 1
    cls = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    det = torch.tensor([[0.0, 100.0], [0.0, 0.0]])
    s = wsddn_proposal_scores(cls, det)
    e = math.e / (1 + math.e)
    expected = torch.tensor([[0.5 * 0.5, 0.5 * 1.0], [e * 0.5, (1 - e) * 0.0]])
    assert torch.allclose(s, expected, atol=1e-6)
    img = wsddn_image_scores(s, eps=1e-6)
    assert torch.allclose(img, torch.tensor([0.25 + 0.5 * e, 0.5]), atol=1e-6)
    # the clamp keeps BCE finite at 0 and 1
    assert wsddn_image_scores(torch.zeros(3, 2))[0].item() == pytest.approx(1e-6)
    assert wsddn_image_scores(torch.ones(3, 2))[0].item() == pytest.approx(1 - 1e-6)


def test_image_label_targets():
    t = image_label_targets([[0, 2], [], [1]], 3)
    assert t.tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 0]]


def test_loss_finite_and_decreasing():
    torch.manual_seed(0)
    head = make_head()
    feats, props, scores, labels = toy_batch()
    opt = torch.optim.Adam(head.parameters(), lr=0.01)
    losses = []
    for _ in range(30):
        loss = head.loss(feats, props, scores, labels)["loss_mil"]
        assert torch.isfinite(loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    # image scores now separate present from absent classes
    with torch.no_grad():
        s = head.proposal_class_scores(feats, props, scores)
    img = torch.stack([wsddn_image_scores(x) for x in s])
    assert min(img[0, 0], img[0, 2]) > img[0, 1] + 0.2  # image 0: classes 0 and 2
    assert img[1, 1] > max(img[1, 0], img[1, 2]) + 0.2  # image 1: class 1


def test_predict_rescales_and_nms():
    torch.manual_seed(0)
    head = make_head(test_cfg=dict(score_thr=0.0, max_per_img=5)).eval()
    feats, props, scores, _ = toy_batch()
    metas = [
        dict(scale_factor=(2.0, 2.0), ori_shape=(32, 32)),
        dict(scale_factor=(1.0, 1.0), ori_shape=(64, 64)),
    ]
    with torch.no_grad():
        res = head.predict(feats, props, scores, metas, rescale=True)
    assert len(res) == 2
    for r, meta in zip(res, metas, strict=True):
        assert 0 < len(r) <= 5
        assert r.bboxes.shape == (len(r), 4) and r.scores.shape == (len(r),)
        assert r.labels.min() >= 0 and r.labels.max() < 3
        h, w = meta["ori_shape"]
        assert r.bboxes[:, 0::2].max() <= w and r.bboxes[:, 1::2].max() <= h
        assert torch.all(r.scores[:-1] >= r.scores[1:])  # sorted
    # image 0 is halved: every box is a proposal / 2 (clipped to 32x32)
    halved = (props[0] / 2).clamp(0, 32)
    d = torch.cdist(res[0].bboxes, halved).min(dim=1).values
    assert d.max() < 1e-4
