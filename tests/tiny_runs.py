"""The cfg_options that make a strong-stage test run tiny and quick, shared by the tests that
train a detector for a few iterations."""

from __future__ import annotations


def tiny_strong_options(train_scale_key: str, test_scale_key: str, side: int) -> dict:
    """No ImageNet init (tests check the init separately), no loader processes, a checkpoint
    and a log line every iteration, every box kept at test time (every image then gets
    detections), and inputs at most ``side`` px: ``*_scale_key`` name the config's resize step
    (its index differs between Faster and Fast R-CNN pipelines)."""
    return {
        "model.backbone.init_cfg": None,
        "train_dataloader.num_workers": 0,
        "train_dataloader.persistent_workers": False,
        "test_dataloader.num_workers": 0,
        "test_dataloader.persistent_workers": False,
        train_scale_key: (side, side),
        test_scale_key: (side, side),
        "default_hooks.checkpoint.interval": 1,
        "default_hooks.logger.interval": 1,
        "model.test_cfg.rcnn.score_thr": 0.0,
    }
