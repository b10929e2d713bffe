"""mmcv's compiled ops work on the CPU and agree with torchvision's implementations."""

import torch
import torchvision
from mmcv.ops import RoIAlign, batched_nms, nms


def _boxes(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * 200
    wh = torch.rand(n, 2, generator=g) * 100 + 5
    return torch.cat([xy, xy + wh], 1), torch.rand(n, generator=g)


def test_nms_matches_torchvision():
    boxes, scores = _boxes(500)
    dets, keep = nms(boxes, scores, iou_threshold=0.5)
    ref = torchvision.ops.nms(boxes, scores, 0.5)
    assert torch.equal(keep.sort().values, ref.sort().values)
    assert torch.allclose(dets[:, 4], scores[keep])
    assert 0 < len(keep) < 500


def test_batched_nms_separates_classes():
    boxes = torch.tensor([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]], dtype=torch.float32)
    scores = torch.tensor([0.9, 0.8, 0.7])
    idxs = torch.tensor([0, 0, 1])
    dets, keep = batched_nms(boxes, scores, idxs, dict(type="nms", iou_threshold=0.5))
    assert sorted(keep.tolist()) == [0, 2]  # the duplicate of class 0 goes, class 1 stays


def test_roi_align_matches_torchvision():
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(2, 8, 32, 48, generator=g)
    boxes, _ = _boxes(40, seed=2)
    rois = torch.cat([torch.randint(0, 2, (40, 1), generator=g).float(), boxes / 4], 1)
    ours = RoIAlign((7, 7), spatial_scale=0.25, sampling_ratio=2, aligned=True)(feats, rois)
    ref = torchvision.ops.roi_align(
        feats, rois, (7, 7), spatial_scale=0.25, sampling_ratio=2, aligned=True
    )
    assert ours.shape == (40, 8, 7, 7)
    assert torch.allclose(ours, ref, atol=1e-5)


def test_roi_align_backward():
    feats = torch.randn(1, 4, 16, 16, requires_grad=True)
    rois = torch.tensor([[0, 2.0, 2.0, 30.0, 30.0]])
    out = RoIAlign((3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)(feats, rois)
    out.sum().backward()
    assert feats.grad is not None and feats.grad.abs().sum() > 0
