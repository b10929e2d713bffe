"""Seeded OICR: another weak detector's boxes (e.g. the CAM black box's) supervise OICR's first
refinement branch. Seed scores per proposal, the head's use of them, the guard for heads that
cannot use them, and a real-VOC training step through the dataset and transforms."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_mil_configs import MOBILE, _cfg, write_voc_inputs  # same folder (prepend mode)
from test_wsddn_head import make_head, toy_batch

from projects.mil_baselines.mil_baselines.oicr_head import WSODOICRHead, oicr_pseudo_labels
from wsod.datasets.weak_dataset import seed_scores


def test_seed_scores_hand_made():
    proposals = np.array(
        [
            [0, 0, 10, 10],  # the class-0 seed box itself
            [0, 0, 10, 20],  # IoU 0.5 with it
            [50, 50, 60, 60],  # overlaps no seed
        ],
        np.float32,
    )
    seeds = {
        "bboxes": np.array([[0, 0, 10, 10], [0, 0, 10, 20]], np.float32),
        "scores": np.array([0.8, 0.3], np.float32),
        "labels": np.array([0, 2]),
        "num_classes": 3,
    }
    s = seed_scores(proposals, seeds)
    assert s.shape == (3, 3)
    np.testing.assert_allclose(s[:, 0], [0.8, 0.4, 0.0])  # score x IoU, best seed of class 0
    np.testing.assert_allclose(s[:, 1], 0.0)  # no seed of class 1
    np.testing.assert_allclose(s[:, 2], [0.15, 0.3, 0.0])
    empty = dict(seeds, bboxes=np.zeros((0, 4)), scores=np.zeros(0), labels=np.zeros(0, int))
    assert seed_scores(proposals, empty).sum() == 0


def test_first_branch_follows_the_seeds_not_the_wsddn_scores():
    torch.manual_seed(0)
    head = make_head(WSODOICRHead, num_refine=1)
    feats, props, scores, labels = toy_batch()
    # seeds: for every labelled class, the LAST proposal of the image, score 0.7
    seeds = []
    for p, lab in zip(props, labels, strict=True):
        s = torch.zeros(len(p), 3)
        s[-1, lab] = 0.7
        seeds.append(s)
    loss = head.loss(feats, props, scores, labels, seed_scores=seeds)["loss_refine0"]
    # the same loss computed by hand from OICR's pseudo labels on the seed scores
    x = head.roi_features(feats, props, scores)
    logits = head.forward(x)["refine"][0].split([len(p) for p in props])
    expected = 0.0
    for p, s, lg, lab in zip(props, seeds, logits, labels, strict=True):
        tgt, w = oicr_pseudo_labels(p, s, lab, head.iou_thr, head.bg_iou_thr_lo)
        assert tgt[-1] in lab and torch.allclose(w[-1], torch.tensor(0.7))
        expected = expected + (w * F.cross_entropy(lg, tgt, reduction="none")).sum() / len(p)
    assert torch.allclose(loss, expected / len(props))
    unseeded = head.loss(feats, props, scores, labels)["loss_refine0"]
    assert not torch.allclose(loss, unseeded)


def test_heads_that_cannot_use_seeds_refuse_them(voc_root, tmp_path):
    from mmdet.registry import DATASETS, MODELS
    from mmengine.dataset import pseudo_collate
    from mmengine.registry import init_default_scope

    init_default_scope("mmdet")
    split, pkl, seeds = _voc_with_seeds(voc_root, tmp_path)
    cfg = _cfg(REPO_CAM)
    ds_cfg = cfg.train_dataloader.dataset
    ds_cfg.ann_file, ds_cfg.proposal_file, ds_cfg.seed_file = str(split), str(pkl), str(seeds)
    ds = DATASETS.build(ds_cfg)
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    batch = model.data_preprocessor(pseudo_collate([ds[0]]), training=True)
    with pytest.raises(ValueError, match="seed_file"):
        model.loss(batch["inputs"], batch["data_samples"])


REPO_CAM = MOBILE.parents[4] / "configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py"


def _voc_with_seeds(voc_root, tmp_path, n=3):
    """A real VOC train split + grid proposals + hand-made 'black box' seeds: for each labelled
    class, the image's 5th proposal with score 0.9 (detector output, not ground truth)."""
    from wsod.datasets.weak_dataset import read_proposal_file

    split, pkl = write_voc_inputs(voc_root, tmp_path / "data", n=n)
    data = json.loads(split.read_text())
    props = read_proposal_file(pkl)
    dets = []
    for im in data["images"]:
        x1, y1, x2, y2 = (float(v) for v in props[im["file_name"]]["bboxes"][5])
        for c in im["labels"]:
            dets.append(
                {
                    "image_id": im["id"],
                    "category_id": c,
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "score": 0.9,
                }
            )
    seeds = tmp_path / "seeds.json"
    seeds.write_text(json.dumps(dets))
    return split, pkl, seeds


def test_seeded_oicr_trains_on_real_voc(voc_root, tmp_path):
    from mmdet.registry import DATASETS, MODELS
    from mmengine.dataset import pseudo_collate
    from mmengine.optim import build_optim_wrapper
    from mmengine.registry import init_default_scope

    init_default_scope("mmdet")
    split, pkl, seeds = _voc_with_seeds(voc_root, tmp_path)
    cfg = _cfg(MOBILE)
    for key in ("train_dataloader", "test_dataloader"):
        ds_cfg = cfg[key].dataset
        ds_cfg.ann_file, ds_cfg.proposal_file, ds_cfg.seed_file = str(split), str(pkl), str(seeds)
    # test pipeline: every proposal kept in file order -> the seed sits at index 5
    test_ds = DATASETS.build(cfg.test_dataloader.dataset)
    sample = test_ds[0]["data_samples"]
    s = sample.proposals.seed_scores
    labels = sample.metainfo["image_labels"]
    assert s.shape == (len(sample.proposals.bboxes), 20)
    assert torch.allclose(s[5, labels], torch.tensor(0.9))
    assert s[:, labels].argmax(dim=0).tolist() == [5] * len(labels)
    absent = [c for c in range(20) if c not in labels]
    assert s[:, absent].sum() == 0
    # training pipeline: a random 500 of the proposals, seed scores stay aligned with them
    train_ds = DATASETS.build(cfg.train_dataloader.dataset)
    item = train_ds[1]["data_samples"]
    assert item.proposals.seed_scores.shape == (len(item.proposals.bboxes), 20)

    model = MODELS.build(cfg.model)
    model.init_weights()
    optim = build_optim_wrapper(model, cfg.optim_wrapper)
    model.train()
    batch = pseudo_collate([train_ds[0], train_ds[1]])
    losses = model.train_step(batch, optim)
    assert all(torch.isfinite(v) for v in losses.values()), losses

    # a seed file naming an image that is not in the split is refused, naming the file
    bad = tmp_path / "bad_seeds.json"
    rows = json.loads(seeds.read_text())
    bad.write_text(json.dumps(rows + [dict(rows[0], image_id=10**9)]))
    cfg.train_dataloader.dataset.seed_file = str(bad)
    with pytest.raises(Exception, match="bad_seeds.json"):
        DATASETS.build(cfg.train_dataloader.dataset)
