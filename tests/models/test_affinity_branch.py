"""The CAM head's learned affinity branch (wsod/models/roi_heads/affinity.py AffinityBranch,
WSODCAMHead(affinity=...), WSODAffinityPhaseHook): what it trains, what it leaves alone, and
the walk it drives at test time."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from wsod.models import WSODAffinityPhaseHook
from wsod.models.roi_heads import WSODCAMHead
from wsod.models.roi_heads.affinity import AffinityBranch
from wsod.models.roi_heads.cam_walks import walk

AFFINITY = dict(in_indices=(0,), in_channels=(4,), stride=8, dilations=(1, 2), seed_hi=0.5)


def head(**kw) -> WSODCAMHead:
    return WSODCAMHead(num_classes=2, in_channels=3, featmap_stride=16, upsample=2, **kw)


def features(h: int = 64, w: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A stride-8 map for the branch and a stride-16 map for the classifier (one image)."""
    torch.manual_seed(0)
    return torch.randn(1, 4, h // 8, w // 8), torch.rand(1, 3, h // 16, w // 16)


def test_branch_embeds_detached_features_at_the_requested_size():
    branch = AffinityBranch((0, 1), (4, 6), channels=8, embed_channels=5)
    a = torch.randn(2, 4, 8, 8, requires_grad=True)
    b = torch.randn(2, 6, 4, 4, requires_grad=True)
    out = branch([a, b], (16, 12))
    assert out.shape == (2, 5, 16, 12)
    out.sum().backward()
    assert a.grad is None and b.grad is None  # the backbone is never moved by it
    assert all(p.grad is not None for p in branch.parameters())
    with pytest.raises(ValueError, match="same length"):
        AffinityBranch((0, 1), (4,))


def test_head_options_are_checked():
    with pytest.raises(ValueError, match=r"unknown keys \['sead_hi'\]"):
        head(affinity=dict(AFFINITY, sead_hi=0.3))
    with pytest.raises(ValueError, match="in_indices and in_channels are required"):
        head(affinity=dict(stride=8))
    with pytest.raises(ValueError, match="needs the affinity branch"):
        head(refine=dict(type="learned"))
    with pytest.raises(ValueError, match="'colour'.*'learned'"):
        head(refine=dict(type="colors"))


def test_affinity_phase_loss_trains_the_branch_alone_and_leaves_padding_unseeded():
    torch.manual_seed(0)
    h = head(affinity=AFFINITY)
    nn.init.constant_(h.fc_cls.weight, 1.0)  # a CAM: positive on the right, 0 on the left
    f8, f16 = features()
    f16[..., :2] = 0.0
    assert set(h.loss((f8, f16), [], [], [[0]])) == {"loss_cls"}  # before the phase
    h.train()
    h.train_affinity = True
    losses = h.loss((f8, f16), [], [], [[0]], [dict(img_shape=(64, 64))])
    assert set(losses) == {"loss_affinity", "seed_fg", "seed_bg"} and losses["loss_affinity"] > 0
    assert float(losses["seed_fg"] + losses["seed_bg"]) == pytest.approx(1.0)  # shares of seeded
    assert 0 < losses["seed_fg"] < 1 and not losses["seed_fg"].requires_grad
    losses["loss_affinity"].backward()
    assert h.fc_cls.weight.grad is None  # the classifier (and its seeds) stay as they are
    assert all(p.grad is not None for p in h.affinity.parameters())
    assert int(h.affinity_steps) == 1
    # an image of 8 x 8 input pixels padded to 64 x 64: one seeded pixel, no pair but itself
    padded = h.loss((f8, f16), [], [], [[0]], [dict(img_shape=(8, 8))])
    assert float(padded["loss_affinity"]) == pytest.approx(0.0, abs=1e-4)
    assert int(h.affinity_steps) == 2  # counted, saved with the weights


class FixedEmbedding(nn.Module):
    """Stands in for a trained branch: a given (1, D, h, w) embedding."""

    def __init__(self, embedding: torch.Tensor) -> None:
        super().__init__()
        self.embedding = embedding

    def forward(self, feats, size):
        assert tuple(size) == tuple(self.embedding.shape[-2:])
        return self.embedding


def test_learned_walk_spreads_inside_an_embedding_region_and_not_across():
    """A map bright on the left half with a halo on the right: with an embedding that tells the
    halves apart the walk keeps the step, with a constant one it blurs across it."""
    refine = dict(type="learned", iters=10, dilations=(1, 2), min_prob=0.5)
    h = head(affinity=AFFINITY, refine=refine)
    cam = torch.full((1, 16, 32), 0.3)
    cam[:, :, :16] = 1.0  # score resolution (1/2): 32 x 64 input pixels
    step = torch.zeros(1, 4, 2, 4)  # 1/8: 16 x 32 input pixels
    step[..., 2:] = 10.0
    probs = torch.ones(1)
    kept = walk(cam, h.refine, probs, None, step[0])
    blurred = walk(cam, h.refine, probs, None, torch.zeros(1, 4, 2, 4)[0])
    assert (kept[0, :, :12] > 0.95).all() and (kept[0, :, 20:] < 0.35).all()
    assert (blurred[0, :, 14:18] - cam[0, :, 14:18]).abs().max() > 0.1
    assert torch.equal(walk(cam, h.refine, torch.zeros(1), None, step[0]), cam)  # min_prob


def test_learned_refine_refuses_an_untrained_branch_and_scores_a_trained_one():
    h = head(affinity=AFFINITY, refine=dict(type="learned", iters=3, dilations=(1, 2)))
    h.eval()
    f8, f16 = features()
    boxes = [torch.tensor([[0.0, 0.0, 32.0, 32.0], [8.0, 8.0, 64.0, 64.0]])]
    meta = [dict(img_shape=(64, 64))]
    with pytest.raises(ValueError, match="never trained.*affinity_steps"):
        h.proposal_class_scores((f8, f16), boxes, None, meta)
    h.affinity_steps += 1
    scores = h.proposal_class_scores((f8, f16), boxes, None, meta)
    assert scores[0].shape == (2, 2) and torch.isfinite(scores[0]).all()


def test_phase_hook_switches_once_and_freezes_everything_but_the_branch(caplog):
    model = nn.Module()
    model.backbone = nn.Linear(2, 2)
    model.roi_head = head(affinity=AFFINITY)
    logger = logging.getLogger("affinity-hook-test")
    runner = SimpleNamespace(model=model, max_iters=4, iter=0, logger=logger)
    hook = WSODAffinityPhaseHook(start_iter=2)
    hook.before_train(runner)
    hook.before_train_iter(runner, 0)
    assert not model.roi_head.train_affinity and model.backbone.weight.requires_grad
    runner.iter = 2
    with caplog.at_level(logging.INFO, logger="affinity-hook-test"):
        hook.before_train_iter(runner, 2)
    assert model.roi_head.train_affinity and "training the affinity branch" in caplog.text
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("roi_head.affinity.") for n in trainable)
    with pytest.raises(ValueError, match="start_iter"):
        WSODAffinityPhaseHook(-1)
    with pytest.raises(TypeError, match="affinity branch"):
        WSODAffinityPhaseHook(0).before_train(SimpleNamespace(model=nn.Linear(1, 1)))


def test_phase_hook_refuses_a_schedule_that_ends_before_the_branch_detection_walks_on(caplog):
    """max_iters <= start_iter: before training, an error naming the option to set when the
    head walks on the branch at test time; only a warning when it does not."""
    model = nn.Module()
    model.roi_head = head(affinity=AFFINITY, refine=dict(type="learned", iters=3))
    hooks = [dict(type="CheckInvalidLossHook"), dict(type="WSODAffinityPhaseHook", start_iter=4)]
    logger = logging.getLogger("affinity-hook-test")
    runner = SimpleNamespace(model=model, max_iters=4, logger=logger, cfg=dict(custom_hooks=hooks))
    with pytest.raises(ValueError, match=r"never trained.*--affinity-start-iter 3"):
        WSODAffinityPhaseHook(start_iter=4).before_train(runner)
    WSODAffinityPhaseHook(start_iter=3).before_train(runner)  # the branch gets the last step
    runner.model.roi_head = head(affinity=AFFINITY)  # raw CAM scores: the branch is optional
    with caplog.at_level(logging.WARNING, logger="affinity-hook-test"):
        WSODAffinityPhaseHook(start_iter=4).before_train(runner)
    assert "never trained" in caplog.text
