"""Start a detector's backbone from another run's trained trunk (``wsod strong --init-backbone``).

The black box's trunk (e.g. the CAM's EfficientNet-Lite0) was fine-tuned on the training
images' labels: starting the strong detector's backbone from it hands the detector what the
black box learnt about the classes instead of ImageNet alone. Weak supervision stays intact: that
trunk saw image labels only. The backbone types must match (e.g. a Lite0 CAM and
``configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_*``); the heads and the neck start as
the config says.

The config gets mmengine's ``Pretrained`` init with ``prefix='backbone.'`` (the rest of the
checkpoint is ignored) and ``backbone_init_sha256``, the checkpoint's SHA-256, so the run's
fingerprint changes when the black box is retrained even if its checkpoint path stays.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from wsod.utils.io import file_sha256

PREFIX = "backbone."


def _weak_run(model_file: Path, error: type[Exception]) -> tuple[Path, Any]:
    """The checkpoint and resolved config a weak stage's ``weak_model.json`` names."""
    from mmengine.config import Config

    if not model_file.is_file():
        raise error(f"{model_file}: no such file; train the black box first (make weak)")
    try:
        record = json.loads(model_file.read_text())
        ckpt, config = Path(record["checkpoint"]), Path(record["config"])
    except (ValueError, KeyError, TypeError):
        raise error(
            f"{model_file}: not a weak stage's model file (needs 'checkpoint' and 'config'; "
            "`wsod weak` writes it as <work dir>/weak_model.json)"
        ) from None
    for path in (ckpt, config):
        if not path.is_file():
            raise error(f"{model_file}: names {path}, which does not exist; rerun make weak")
    return ckpt, Config.fromfile(str(config), import_custom_modules=False)


def _backbone_keys(backbone_cfg: dict) -> set[str]:
    """The parameter and buffer names of the config's backbone (built without weights)."""
    import copy

    from mmdet.registry import MODELS

    import wsod.models  # noqa: F401  (registers the WSOD backbones)

    cfg = copy.deepcopy(dict(backbone_cfg))
    cfg["init_cfg"] = None
    return set(MODELS.build(cfg).state_dict())


def init_backbone_from(
    cfg: Any, model_file: str | os.PathLike, *, error: type[Exception] = ValueError
) -> str:
    """Point ``cfg.model.backbone`` at the trunk of a weak stage's run (changes ``cfg``).

    Args:
        cfg: the strong stage's prepared config.
        model_file: the weak stage's ``weak_model.json``.
        error: raised, naming the files and the fix, when the run is missing, its backbone type
            differs from the config's, or its checkpoint lacks some of the backbone's weights.

    Returns:
        The checkpoint the backbone will load.
    """
    model_file = Path(model_file)
    ckpt, weak_cfg = _weak_run(model_file, error)
    mine, theirs = cfg.model.backbone, weak_cfg.model.backbone
    kind = lambda b: (b.get("type"), b.get("arch"))  # noqa: E731
    if kind(mine) != kind(theirs):
        raise error(
            f"{model_file}: its backbone is {kind(theirs)}, the strong config's is {kind(mine)}; "
            "pick a strong config with the black box's backbone (e.g. "
            "configs/faster_rcnn/faster-rcnn_efficientnet-lite0_fpn_* for a Lite0 CAM)"
        )
    import torch

    import wsod.models  # noqa: F401  (allow-lists mmengine's checkpoint globals)

    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    state = state.get("state_dict", state)
    have = {k[len(PREFIX) :] for k in state if k.startswith(PREFIX)}
    missing = sorted(_backbone_keys(mine) - have)
    if missing:
        raise error(
            f"{ckpt}: lacks {len(missing)} weights of the strong config's backbone (e.g. "
            f"{', '.join(missing[:3])}); the two backbones are built differently"
        )
    cfg.model.backbone.init_cfg = {"type": "Pretrained", "checkpoint": str(ckpt), "prefix": PREFIX}
    cfg.backbone_init_sha256 = file_sha256(ckpt)
    return str(ckpt)
