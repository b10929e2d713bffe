"""Affinity targets from CAM seeds, predicted affinities, their loss and the walk with learned
affinities (wsod/models/roi_heads/affinity.py), on hand-made maps."""

from __future__ import annotations

import pytest
import torch
from scipy import ndimage

from wsod.models.roi_heads.affinity import (
    BACKGROUND,
    IGNORE,
    affinity_loss,
    affinity_targets,
    cam_seeds,
    predicted_affinities,
    transition_weights,
)
from wsod.models.roi_heads.cam_refine import propagate


def test_seeds_from_the_labelled_classes_maps():
    cams = torch.zeros(3, 4, 6)
    cams[0, :, :2] = 1.0  # class 0: left columns
    cams[0, :, 2] = 0.3  # a weak band: neither seed
    cams[2, :, 4:] = 2.0  # class 2: right columns (its own maximum normalises it)
    cams[1] = 5.0  # class 1 everywhere, but not in the image's labels
    seeds = cam_seeds(cams, labels=[0, 2], hi=0.6, lo=0.1)
    assert seeds[:, :2].eq(1).all() and seeds[:, 4:].eq(3).all()
    assert seeds[:, 2].eq(IGNORE).all() and seeds[:, 3].eq(BACKGROUND).all()
    assert cam_seeds(cams, labels=[]).eq(BACKGROUND).all()
    with pytest.raises(ValueError, match="lo <= hi"):
        cam_seeds(cams, [0], hi=0.2, lo=0.5)


def test_pair_targets_across_and_along_the_seeds():
    seeds = torch.tensor([[1, 1, IGNORE, BACKGROUND, BACKGROUND]])
    t = affinity_targets(seeds, dilations=(1, 2))
    # neighbour order per dilation: (-1,-1) (-1,0) (-1,+1) (0,-1) (0,+1) (+1,-1) (+1,0) (+1,+1)
    right1, right2, left1 = 4, 8 + 4, 3
    assert t["fg_pos"][right1, 0, 0]  # class 1 next to class 1
    assert t["neg"][right2, 0, 1]  # class 1 two pixels from background
    assert not (t["fg_pos"] | t["bg_pos"] | t["neg"])[right1, 0, 1]  # next to the unknown
    assert t["bg_pos"][left1, 0, 4]
    assert not t["neg"][:, 0, 2].any()  # the unknown pixel takes part in no pair


def test_predicted_affinities_and_the_loss_prefer_embeddings_that_follow_the_seeds():
    seeds = torch.zeros(8, 8, dtype=torch.long)
    seeds[2:6, 2:6] = 1
    t = affinity_targets(seeds, (1, 2))
    good = (seeds == 1).float()[None, None] * 10.0  # constant inside each seed region
    flat = torch.zeros(1, 1, 8, 8)
    a_good, a_flat = predicted_affinities(good, (1, 2)), predicted_affinities(flat, (1, 2))
    assert torch.allclose(a_flat, torch.ones_like(a_flat))
    assert a_good[0][t["fg_pos"]].min() == 1.0 and a_good[0][t["neg"]].max() < 1e-4
    assert affinity_loss(a_good[0], t) < 0.01 < affinity_loss(a_flat[0], t)


def test_a_learned_embedding_stops_the_walk_between_two_objects():
    """Seeds from a CAM that joins two objects; the embedding learned from its confident pixels
    separates them, and the walk of the class map and a background map (1 - CAM) with its
    affinities gives one foreground region per object (foreground: class > background)."""
    h, w = 24, 48
    objects = torch.zeros(h, w)
    objects[6:18, 5:19] = 1.0
    objects[6:18, 29:43] = 1.0  # 10 px of background between them
    cam = torch.from_numpy(ndimage.gaussian_filter(objects.numpy(), 6.0)).float()[None]
    cam = cam / cam.max()
    maps = torch.cat([cam, 1 - cam])[None]  # the class and the background
    regions = lambda m: ndimage.label((m[0] > m[1]).numpy())[1]  # noqa: E731
    assert regions(maps[0]) == 1  # the blur joins them: one box around both
    # seeds: the confident core of each object (hi) and the background below lo; reach 8 px, so
    # that foreground and background seeds form negative pairs across the unknown band
    dilations = (1, 2, 4, 8)
    seeds = cam_seeds(cam, labels=[0], hi=0.7, lo=0.3)
    targets = affinity_targets(seeds, dilations)
    assert targets["neg"].sum() > 0 and targets["fg_pos"].sum() > 0
    image = torch.stack([objects, 1 - objects, torch.zeros(h, w)])[None]  # the network's input
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)
    )
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        loss = affinity_loss(predicted_affinities(net(image), dilations)[0], targets)
        loss.backward()
        opt.step()
    assert loss < 0.05
    with torch.no_grad():
        weights = transition_weights(predicted_affinities(net(image), dilations))
        walked = propagate(maps, weights, dilations, iters=10)[0]
    assert torch.allclose(weights.sum(1), torch.ones(1, h, w), atol=1e-5)
    assert regions(walked) == 2  # one region, hence one box, per object
