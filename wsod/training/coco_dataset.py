"""The strong stage's dataset wiring: point a config's ``CocoDataset`` (possibly inside
wrappers such as ``RepeatDataset``) at a COCO json, its image folder and its classes, and make
sure training stops on a non-finite loss (``WSODFiniteLossHook``).

Each function takes the stage's error class (``error``), so that a wrong config is reported as
the stage's own error, naming the config.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

FINITE_LOSS_HOOK = {"type": "WSODFiniteLossHook", "interval": 1}


def inner_dataset(ds_cfg: Any, where: str, error: type[Exception] = ValueError) -> Any:
    """The innermost dataset dict of (possibly wrapped) ``ds_cfg``: the one with ``ann_file``.

    Raises:
        error: the config's dataset has no ``ann_file`` (naming ``where``).
    """
    node = ds_cfg
    while node is not None and "ann_file" not in node and "dataset" in node:
        node = node["dataset"]
    if node is None or "ann_file" not in node:
        raise error(
            f"{where}: the config's dataset has no ann_file; the strong "
            "stage needs a CocoDataset (see configs/_base_/datasets/)"
        )
    return node


def set_coco_dataset(
    ds_cfg: Any,
    where: str,
    ann_file: str | os.PathLike,
    root: str | os.PathLike,
    classes: Sequence[str],
    error: type[Exception] = ValueError,
) -> None:
    """A (wrapped) ``CocoDataset`` on ``ann_file``: images under ``root`` (``file_name`` is
    relative to it), ``classes`` in category-id order."""
    ds = inner_dataset(ds_cfg, where, error)
    ds.ann_file = str(ann_file)
    ds.data_root = str(root)
    ds.data_prefix = {"img": ""}
    ds.metainfo = {"classes": tuple(classes)}


def ensure_finite_loss_hook(cfg: Any) -> None:
    """``WSODFiniteLossHook`` first among the config's ``custom_hooks`` unless it is there."""
    hooks = list(cfg.get("custom_hooks") or [])
    if not any(h.get("type") == FINITE_LOSS_HOOK["type"] for h in hooks):
        hooks.insert(0, dict(FINITE_LOSS_HOOK))
    cfg.custom_hooks = hooks
