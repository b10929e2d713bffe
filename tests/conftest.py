"""Shared fixtures. Real VOC 2007 images come from ../shared/data (never copied into the repo).

Set ``WSOD_VOC_ROOT`` to point the tests at another VOC2007 folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _voc_root() -> Path:
    env = os.environ.get("WSOD_VOC_ROOT")
    return Path(env) if env else REPO.parent / "shared" / "data" / "VOCdevkit" / "VOC2007"


@pytest.fixture(scope="session")
def voc_root() -> Path:
    """The real VOC2007 folder (JPEGImages, Annotations, ImageSets/Main)."""
    root = _voc_root()
    if not (root / "ImageSets" / "Main" / "train.txt").is_file():
        raise FileNotFoundError(
            f"{root}: real VOC 2007 data not found; the tests need it (set WSOD_VOC_ROOT)"
        )
    return root


@pytest.fixture(scope="session")
def voc_train_ids(voc_root: Path) -> list[str]:
    """A handful of real VOC train image ids (first 6 of the official list)."""
    return (voc_root / "ImageSets" / "Main" / "train.txt").read_text().split()[:6]
