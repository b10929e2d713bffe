"""The CAM head's instance branch (wsod/models/roi_heads/instance_branch.py, WSODCAMHead(instance=
...), scoring 'instances' / 'components'): its training targets, its losses, what it trains,
and the detections it gives; each check with a planted fault it catches."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from mmengine.config import Config
from torch import nn

from wsod.models import WSODAffinityPhaseHook
from wsod.models.roi_heads import WSODCAMHead
from wsod.models.roi_heads.affinity import BACKGROUND, IGNORE
from wsod.models.roi_heads.cam_refine import neighbours
from wsod.models.roi_heads.instance_branch import (
    displacement_loss,
    displacement_targets,
    path_max,
)

REPO = Path(__file__).resolve().parents[2]
INSTANCE = dict(in_indices=(0,), in_channels=(4,), stride=8, dilations=(1, 2), seed_hi=0.5)
GROUPED = dict(type="instances", thr=0.3, min_area=0.0, centroid_thr=10.0, iters=5)


def head(**kw) -> WSODCAMHead:
    return WSODCAMHead(num_classes=2, in_channels=3, featmap_stride=16, upsample=2, **kw)


def features(h: int = 64, w: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(1, 4, h // 8, w // 8), torch.rand(1, 3, h // 16, w // 16)


def two_blobs() -> torch.Tensor:
    """Seeds: two 3x3 squares of class 0 (seed 1), background around, an unknown column."""
    seeds = torch.full((8, 12), BACKGROUND, dtype=torch.long)
    seeds[1:4, 1:4] = 1
    seeds[4:7, 7:10] = 1
    seeds[:, 11] = IGNORE
    return seeds


def test_displacement_targets_point_each_seed_component_to_its_centroid():
    target, fg, bg, n = displacement_targets(two_blobs())
    assert n == 2 and fg.sum() == 18 and bg.sum() == 8 * 11 - 18
    # every foreground pixel's target lands on its square's centre: (2, 2) and (5, 8)
    ys, xs = torch.nonzero(fg, as_tuple=True)
    landed = torch.stack([ys + target[0, ys, xs], xs + target[1, ys, xs]], dim=1)
    assert {tuple(p.tolist()) for p in landed} == {(2.0, 2.0), (5.0, 8.0)}
    assert (target[:, ~fg] == 0).all()
    # the loss is 0 for that field and not for a planted fault: the field with its sign flipped
    assert displacement_loss(target, target, fg, bg) == 0
    assert displacement_loss(-target, target, fg, bg) > 1


def brute_path_max(b: np.ndarray, dilations) -> np.ndarray:
    """Pixel loop: max of ``b`` on the straight path to each neighbour (borders replicated)."""
    h, w = b.shape
    out = []
    for d in dilations:
        for sy in (-1, 0, 1):
            for sx in (-1, 0, 1):
                if sy == sx == 0:
                    continue
                m = np.zeros((h, w))
                for y in range(h):
                    for x in range(w):
                        path = [
                            b[min(max(y + k * sy, 0), h - 1), min(max(x + k * sx, 0), w - 1)]
                            for k in range(d + 1)
                        ]
                        m[y, x] = max(path)
                out.append(m)
    return np.stack(out)


def test_path_max_equals_a_pixel_loop_and_uses_the_neighbours_layout():
    rng = np.random.default_rng(0)
    b = rng.random((7, 9))
    dilations = (1, 3)
    got = path_max(torch.from_numpy(b)[None].float(), dilations)[0].numpy()
    assert np.allclose(got, brute_path_max(b, dilations), atol=1e-6)
    # the far end of each path is the neighbour of the same index (same layout)
    far = neighbours(torch.from_numpy(b)[None, None].float(), dilations)[0, 0].numpy()
    assert (got >= far - 1e-6).all()
    # planted fault: a path that leaves out its far end is told apart
    short = brute_path_max(b, (0, 2))
    assert not np.allclose(short, brute_path_max(b, (1, 3)))


def test_instance_phase_trains_the_branch_alone():
    h = head(instance=INSTANCE)
    nn.init.constant_(h.fc_cls.weight, 1.0)
    f8, f16 = features()
    f16[..., :2] = 0.0
    h.train()
    h.train_affinity = True
    losses = h.loss((f8, f16), [], [], [[0]], [dict(img_shape=(64, 64))])
    assert {"loss_displacement", "loss_boundary", "seed_instances"} <= set(losses)
    assert all(torch.isfinite(v) for v in losses.values()) and losses["seed_instances"] >= 1
    (losses["loss_displacement"] + losses["loss_boundary"]).backward()
    assert h.fc_cls.weight.grad is None
    assert all(p.grad is not None for p in h.instance.parameters())
    assert int(h.instance_steps) == 1


def test_phase_hook_trains_an_instance_branch_alone(caplog):
    """A head with the instance branch only: the phase hook accepts it and trains its
    parameters, nothing else (a hook that knew the affinity branch alone froze them all)."""
    model = nn.Module()
    model.backbone = nn.Linear(2, 2)
    model.roi_head = head(instance=INSTANCE)
    logger = logging.getLogger("instance-hook-test")
    runner = SimpleNamespace(model=model, max_iters=4, iter=1, logger=logger)
    hook = WSODAffinityPhaseHook(start_iter=1)
    hook.before_train(runner)
    hook.before_train_iter(runner, 1)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {
        n for n, _ in model.named_parameters() if n.startswith("roi_head.instance.")
    }
    assert trainable and model.roi_head.train_affinity


def test_options_are_checked():
    with pytest.raises(ValueError, match=r"instance: unknown keys \['seed'\]"):
        head(instance=dict(INSTANCE, seed=1))
    with pytest.raises(ValueError, match="needs the instance branch"):
        head(scoring=GROUPED)
    with pytest.raises(ValueError, match="needs the instance branch"):
        WSODCAMHead.check_cfg(dict(scoring=GROUPED))
    with pytest.raises(ValueError, match="does not read"):
        head(scoring=dict(type="components", area_weight=3.0))
    # no branch needed; the instances keys are ignored (a config switches with the type alone)
    assert "centroid_thr" not in head(scoring=dict(GROUPED, type="components")).scoring


class FixedOutput(nn.Module):
    """Stands in for a trained instance branch: a constant (dy, dx, boundary logit)."""

    def __init__(self, values: tuple[float, float, float]) -> None:
        super().__init__()
        self.values = torch.tensor(values)[None, :, None, None]

    def forward(self, feats, size):
        return self.values.expand(1, 3, *size)


def test_grouped_scoring_adds_mask_boxes_and_refuses_an_untrained_branch():
    """Scores of the proposals, then of the mask boxes; with a zero field and no boundary each
    connected component is its own centroid region, so 'instances' equals 'components'; a
    field that takes every pixel to one blob makes one instance of the class's two blobs."""
    h = head(instance=INSTANCE, scoring=GROUPED).eval()
    f8, _ = features()
    # class 0: two blobs in opposite corners, class 1: one in the middle (CAMs at 1/16)
    f16 = torch.zeros(1, 3, 4, 4)
    f16[0, 0, 0, 0] = f16[0, 0, 3, 3] = 1.0
    f16[0, 1, 1:3, 1:3] = 1.0
    with torch.no_grad():
        h.fc_cls.weight.zero_()
        h.fc_cls.weight[0, 0] = h.fc_cls.weight[1, 1] = 1.0
    boxes = [torch.tensor([[0.0, 0.0, 32.0, 32.0], [8.0, 8.0, 64.0, 64.0]])]
    meta = [dict(img_shape=(64, 64), ori_shape=(64, 64), scale_factor=(1.0, 1.0))]
    with pytest.raises(ValueError, match="never trained.*instance_steps"):
        h.predict((f8, f16), boxes, None, meta)
    h.instance_steps += 1
    h.instance = FixedOutput((0.0, 0.0, -20.0))
    ((b, s),) = h._scored((f8, f16), boxes, meta, None, True)
    assert len(b) == 2 + 3 and s.shape == (len(b), 2) and torch.isfinite(s).all()
    # a blob's own box beats both proposals for its class, and stays below the probability
    # (its peak, 1, times the share of the blob its box holds net of the corners it adds)
    probs = torch.sigmoid(h((f8, f16)).mean(dim=(2, 3)))[0]
    best = s[2:].max(dim=0).values
    assert (best > s[:2].max(dim=0).values).all() and (best <= probs).all()
    assert torch.equal(b[:2], boxes[0])  # the proposals first, then the mask boxes
    only = h.proposal_class_scores((f8, f16), boxes, None, meta)[0]
    assert torch.equal(only, s[:2])  # what test-time augmentation averages
    res = h.predict((f8, f16), boxes, None, meta)[0]
    assert len(res.bboxes) and torch.isfinite(res.scores).all()
    comp = head(scoring=dict(type="components", min_area=0.0)).eval()
    comp.load_state_dict({k: v for k, v in h.state_dict().items() if k.startswith("fc_cls")})
    ((cb, cs),) = comp._scored((f8, f16), boxes, meta, None, True)
    assert torch.equal(cb, b) and torch.allclose(cs, s)
    h.instance = FixedOutput((10.0, 10.0, -20.0))  # all pushed to the corner blob: 2 instances
    ((mb, _),) = h._scored((f8, f16), boxes, meta, None, True)
    assert not torch.equal(mb, b)


def test_probability_floor_groups_only_the_likely_classes():
    """scoring.min_prob: a class below it gets no mask box and every box scores it as
    'thresholded' at the same thr; a class above it scores as with no floor."""
    f8, _ = features()
    f16 = torch.zeros(1, 3, 4, 4)
    f16[0, 0, 0, 0] = f16[0, 0, 3, 3] = 1.0  # class 0: two one-cell blobs (probability lower)
    f16[0, 1, 1:3, 1:3] = 1.0  # class 1: one 2x2 blob
    # the last proposal holds class 0's corner blob: grouping and 'thresholded' score it apart
    boxes = [torch.tensor([[0.0, 0.0, 32.0, 32.0], [8.0, 8.0, 64.0, 64.0], [0.0, 0.0, 20.0, 20.0]])]
    meta = [dict(img_shape=(64, 64), ori_shape=(64, 64), scale_factor=(1.0, 1.0))]

    @torch.no_grad()
    def scored(scoring):
        h = head(scoring=scoring).eval()
        h.fc_cls.weight.zero_()
        h.fc_cls.weight[0, 0] = h.fc_cls.weight[1, 1] = 1.0
        probs = torch.sigmoid(h((f8, f16)).mean(dim=(2, 3)))[0]
        return h._scored((f8, f16), boxes, meta, None, True)[0], probs

    comps = dict(type="components", thr=0.3, min_area=0.0)
    (b_all, s_all), probs = scored(comps)
    assert probs[0] < probs[1]
    (b, s), _ = scored(dict(comps, min_prob=float(probs.mean())))
    (pb, ps), _ = scored(dict(type="thresholded", thr=0.3))
    # class 1 alone is grouped: its one mask box after the proposals, scored as without a floor
    assert len(b_all) == 3 + 3 and len(b) == 3 + 1
    assert torch.equal(b[:3], boxes[0]) and torch.equal(b[3], b_all[5])
    assert torch.allclose(s[:3, 1], s_all[:3, 1]) and torch.allclose(s[3, 1], s_all[5, 1])
    # class 0 is scored by 'thresholded' (below its grouped score on the blob's proposal)
    assert torch.allclose(s[:3, 0], ps[:, 0]) and s[2, 0] < s_all[2, 0]
    # above every class: no mask box, the 'thresholded' scores themselves
    (nb, ns), _ = scored(dict(comps, min_prob=1.0))
    assert torch.equal(nb, pb) and torch.allclose(ns, ps)


def test_instances_config_repeats_the_affinity_config_exactly():
    """The instances config cannot inherit the affinity config (one level of configs,
    tests/test_config_layout.py) and repeats its settings: they must stay equal."""
    folder = REPO / "configs/cam"
    aff = Config.fromfile(
        str(folder / "cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py")
    )
    ins = Config.fromfile(
        str(folder / "cam_efficientnet-lite0_4k-instances_voc07-train_voc07-val.py")
    )
    for key in ("backbone", "data_preprocessor"):
        assert ins.model[key] == aff.model[key]
    for key in ("affinity", "refine", "in_channels", "featmap_stride", "dropout", "upsample"):
        assert ins.model.roi_head.get(key) == aff.model.roi_head.get(key), key
    assert ins.custom_hooks == aff.custom_hooks and ins.train_cfg == aff.train_cfg
    keys = ins.optim_wrapper.paramwise_cfg.custom_keys
    assert (
        keys["roi_head.affinity"]
        == aff.optim_wrapper.paramwise_cfg.custom_keys["roi_head.affinity"]
    )
    # the instance branch learns slower than the affinity branch: at the affinity branch's lr
    # it collapsed to a constant output (docs/experiments/2026-12-07-instance-separation.md)
    assert keys["roi_head.instance"]["lr_mult"] < keys["roi_head.affinity"]["lr_mult"]
    assert ins.model.roi_head.scoring.type == "instances"
    WSODCAMHead.check_cfg(ins.model.roi_head)
