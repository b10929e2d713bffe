"""Shared fixtures. Real VOC 2007 images come from ../shared/data (never copied into the repo).

Set ``WSOD_VOC_ROOT`` to point the tests at another VOC2007 folder.

Property tests (hypothesis) run under the ``wsod`` profile: no per-example deadline (a busy
machine must not fail a test; speed goals live in benchmarks/) and a fixed seed under CI
(``CI`` set), so a CI run is reproducible; ``HYPOTHESIS_PROFILE=explore`` draws 10x more
examples locally.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("wsod", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.register_profile("explore", parent=settings.get_profile("wsod"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "wsod"))

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


@pytest.fixture()
def one_torch_thread():
    """One intra-op thread for a test that runs a network: on a loaded 2-core machine OpenMP
    threads spin against other processes and a MobileNetV2 forward takes ~100x longer with 2
    threads than with 1. Modules opt in with ``pytestmark = pytest.mark.usefixtures(...)``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
