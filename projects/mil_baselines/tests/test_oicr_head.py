"""OICR head: pseudo labels on a hand-made case, losses, learning, and inference scores."""

from __future__ import annotations

import torch
from test_wsddn_head import make_head, toy_batch  # same folder (pytest prepend import mode)

from projects.mil_baselines.mil_baselines.oicr_head import WSODOICRHead, oicr_pseudo_labels


def test_pseudo_labels_hand_made():
    # 5 proposals, 3 classes (background index = 3); image labels: classes 0 and 2
    boxes = torch.tensor(
        [
            [0.0, 0.0, 10.0, 10.0],  # 0: seed of class 0 (score 0.9)
            [1.0, 0.0, 11.0, 10.0],  # 1: IoU 9/11 = 0.82 with box 0 -> class 0
            [50.0, 50.0, 70.0, 70.0],  # 2: seed of class 2 (score 0.6)
            [55.0, 50.0, 75.0, 70.0],  # 3: IoU 15/25 = 0.6 with box 2 -> class 2
            [0.0, 0.0, 30.0, 30.0],  # 4: IoU 100/900 = 0.11 with box 0 -> background
        ]
    )
    prev = torch.tensor(
        [
            [0.9, 0.0, 0.1],
            [0.5, 0.8, 0.0],  # class 1 scores high here but class 1 is absent: no seed
            [0.1, 0.0, 0.6],
            [0.0, 0.0, 0.3],
            [0.2, 0.0, 0.0],
        ]
    )
    labels, weights = oicr_pseudo_labels(boxes, prev, [2, 0], iou_thr=0.5)
    assert labels.tolist() == [0, 0, 2, 2, 3]
    assert torch.allclose(weights, torch.tensor([0.9, 0.9, 0.6, 0.6, 0.9]))
    # proposals far from every seed can be ignored
    labels, weights = oicr_pseudo_labels(boxes, prev, [0, 2], bg_iou_thr_lo=0.2)
    assert labels[4] == 3 and weights[4] == 0
    # no labels -> all background, zero weight
    labels, weights = oicr_pseudo_labels(boxes, prev, [])
    assert labels.tolist() == [3] * 5 and weights.sum() == 0


def test_loss_keys_and_learning():
    torch.manual_seed(0)
    head = make_head(WSODOICRHead, num_refine=3)
    feats, props, scores, labels = toy_batch()
    losses = head.loss(feats, props, scores, labels)
    assert set(losses) == {"loss_mil", "loss_refine0", "loss_refine1", "loss_refine2"}
    opt = torch.optim.Adam(head.parameters(), lr=0.01)
    totals = []
    for _ in range(30):
        losses = head.loss(feats, props, scores, labels)
        total = sum(losses.values())
        assert all(torch.isfinite(v) for v in losses.values())
        opt.zero_grad()
        total.backward()
        opt.step()
        totals.append(total.item())
    assert totals[-1] < 0.6 * totals[0], totals


def test_inference_scores_are_refinement_mean():
    torch.manual_seed(0)
    head = make_head(WSODOICRHead, num_refine=2).eval()
    feats, props, scores, _ = toy_batch()
    with torch.no_grad():
        s = head.proposal_class_scores(feats, props, scores)
        x = head.roi_features(feats, props, scores)
        outs = head.forward(x)
    expected = sum(torch.softmax(o, 1)[:, :3] for o in outs["refine"]) / 2
    assert [t.shape for t in s] == [(12, 3), (9, 3)]
    assert torch.allclose(torch.cat(s), expected, atol=1e-6)
    head.test_with_wsddn = True
    with torch.no_grad():
        s2 = head.proposal_class_scores(feats, props, scores)
    mil = head.mil_scores(outs, [12, 9])
    assert torch.allclose(s2[1], (expected[12:] + mil[1]) / 2, atol=1e-6)
    with torch.no_grad():
        res = head.predict(
            feats, props, scores, [dict(scale_factor=(1.0, 1.0), ori_shape=(64, 64))] * 2
        )
    assert all(len(r) > 0 and r.labels.max() < 3 for r in res)


def test_inference_on_chosen_branches():
    torch.manual_seed(0)
    head = make_head(WSODOICRHead, num_refine=3, test_branches=[1]).eval()
    feats, props, scores, _ = toy_batch()
    with torch.no_grad():
        s = head.proposal_class_scores(feats, props, scores)
        outs = head.forward(head.roi_features(feats, props, scores))
    assert torch.allclose(torch.cat(s), torch.softmax(outs["refine"][1], 1)[:, :3], atol=1e-6)
    assert not torch.allclose(torch.cat(s), torch.softmax(outs["refine"][0], 1)[:, :3])
    for bad in ([3], [], [-1]):
        try:
            make_head(WSODOICRHead, num_refine=3, test_branches=bad)
        except ValueError as e:
            assert "test_branches" in str(e)
        else:
            raise AssertionError(f"test_branches={bad} accepted")
