"""``--precision auto`` decides by what the CPU computes fast (:mod:`wsod.training.precision`):
by its flags where they tell (mocked CPUs: AVX-512 without bf16, with AVX512_BF16, with AMX),
by a cached calibration elsewhere; the choice is printed and recorded in the sidecars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wsod.commands import stage_actions
from wsod.training import precision as P
from wsod.utils import io as wio
from wsod.utils.cpu import CpuInfo, describe

REPO = Path(__file__).resolve().parents[2]
CAM = REPO / "configs/cam/cam_mobilenetv2_demo.py"
MOBILE = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py"
FEATURES = ("avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx_bf16")


def _cfg(path):
    from mmengine.config import Config

    import wsod.models  # noqa: F401  (registers the project's modules)

    return Config.fromfile(str(path))


def _cpu(arch="x86_64", flags=(), torch_checked=FEATURES, proc=("fpu",), model="Test CPU"):
    return CpuInfo(
        model=model,
        arch=arch,
        cores=2,
        features={f: f in flags for f in FEATURES},
        proc_flags=frozenset(proc),
        torch_checked=tuple(torch_checked),
    )


AVX512 = _cpu(flags=("avx2", "avx512", "avx512_vnni"))  # Skylake .. Ice Lake Xeons
AVX512_BF16 = _cpu(flags=("avx2", "avx512", "avx512_vnni", "avx512_bf16"))  # Zen 4, Cooper Lake
AMX = _cpu(flags=("avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx_bf16"))  # Sapphire Rapids
ARM_BF16 = _cpu(arch="aarch64", torch_checked=(), proc=("fp", "asimd", "bf16"))


@pytest.fixture
def cpu_only(monkeypatch, tmp_path):
    """No GPU, oneDNN offering bf16 (as on any AVX-512 CPU), the calibration cache in tmp_path;
    the provenance notes of the test are forgotten afterwards."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(P, "_onednn_bf16", lambda: True)
    monkeypatch.setenv("WSOD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(wio, "_NOTED", {})
    return tmp_path


@pytest.mark.parametrize(
    ("cpu", "expected", "word"),
    [(AVX512, "fp32", "emulate"), (AVX512_BF16, "bf16", "AVX512_BF16"), (AMX, "bf16", "AMX")],
)
def test_auto_decides_by_the_flags(cpu_only, cpu, expected, word):
    choice = P.choose_precision("auto", info=cpu)
    assert (choice.precision, choice.by) == (expected, "flags")
    assert word in choice.why
    assert choice.cpu == describe(cpu)


def test_flags_without_onednn_bf16_keep_fp32_and_explicit_values_are_kept(cpu_only, monkeypatch):
    monkeypatch.setattr(P, "_onednn_bf16", lambda: False)
    assert P.choose_precision("auto", info=_cpu(flags=("avx2",))).precision == "fp32"
    assert P.choose_precision("auto", info=AMX).precision == "fp32"  # a torch without them
    monkeypatch.setattr(P, "_onednn_bf16", lambda: True)
    asked = P.choose_precision("bf16", info=AVX512)
    assert (asked.precision, asked.by) == ("bf16", "asked")
    assert "auto would take fp32 here" in asked.why  # the user is told it is slower here
    assert "auto would" not in P.choose_precision("bf16", info=AMX).why
    with pytest.raises(ValueError, match="expected one of auto, bf16, fp32"):
        P.choose_precision("fp16", info=AVX512)


def test_a_gpu_keeps_fp32(cpu_only, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert P.choose_precision("auto", info=AMX).by == "gpu"
    assert P.choose_precision("auto", info=AMX).precision == "fp32"


def test_flags_that_cannot_tell_leave_it_to_the_calibration():
    assert P.by_flags(ARM_BF16, onednn_bf16=True) is None
    unknown_x86 = _cpu(torch_checked=(), proc=())  # no torch checks, no /proc/cpuinfo
    assert P.by_flags(unknown_x86, onednn_bf16=True) is None


@pytest.mark.parametrize(
    ("fp32_s", "bf16_s", "expected"),
    [(1.0, 0.5, "bf16"), (1.0, 0.97, "fp32"), (1.0, 1.3, "fp32"), (1.06, 1.0, "bf16")],
)
def test_the_calibration_picks_bf16_only_when_clearly_faster(fp32_s, bf16_s, expected):
    assert P.pick(fp32_s, bf16_s)[0] == expected


@pytest.mark.parametrize(("bf16_s", "expected"), [(0.4, "bf16"), (1.2, "fp32")])
def test_the_calibration_decides_once_per_cpu_and_is_cached(
    cpu_only, monkeypatch, bf16_s, expected
):
    cfg = _cfg(CAM)
    calls = []

    def fake_calibrate(cfg, steps=P.CALIBRATION_STEPS):
        calls.append(steps)
        return {"fp32_s": 1.0, "bf16_s": bf16_s, "steps": steps}

    monkeypatch.setattr(P, "calibrate", fake_calibrate)
    first = P.choose_precision("auto", cfg, info=ARM_BF16)
    again = P.choose_precision("auto", cfg, info=ARM_BF16)
    assert (first.precision, first.by) == (expected, "calibration")
    assert again == first and len(calls) == 1  # the second stage reads the cache
    cache = json.loads(P.cache_file().read_text())
    assert list(cache) == [P.cache_key(cfg, ARM_BF16)]
    assert "Test CPU" in P.cache_key(cfg, ARM_BF16)
    other = _cpu(arch="aarch64", torch_checked=(), proc=("bf16",), model="Other CPU")
    P.choose_precision("auto", cfg, info=other)
    assert len(calls) == 2  # another CPU model measures anew


def test_calibrate_times_the_configs_own_trunk_both_ways(one_torch_thread):
    cfg = _cfg(CAM)
    timing = P.calibrate(cfg, steps=1)
    assert timing["fp32_s"] > 0 and timing["bf16_s"] > 0
    batch, h, w = P._input_shape(cfg)
    assert timing["input"] == [batch, 3, h, w]
    assert batch == cfg.train_dataloader.batch_size
    assert "MobileNet" in timing["model"]


def test_set_precision_prints_the_choice_and_the_sidecars_record_it(cpu_only, monkeypatch, capsys):
    import wsod.utils.cpu as wcpu

    monkeypatch.setattr(P, "cpu_info", lambda: AVX512)
    cfg = _cfg(MOBILE)
    assert P.set_precision(cfg, "auto") == "fp32"
    assert cfg.optim_wrapper.type == "OptimWrapper"
    err = capsys.readouterr().err
    assert "precision: fp32 (auto): AVX-512 without AVX512_BF16" in err
    assert describe(AVX512) in err
    out = cpu_only / "a.json"
    wio.write_json_artifact(out, {"x": 1}, stage="test")
    meta = json.loads(wio.meta_path(out).read_text())
    assert meta["precision"]["precision"] == "fp32"
    assert meta["precision"]["requested"] == "auto" and meta["precision"]["by"] == "flags"
    assert meta["cpu"]["summary"] == describe(wcpu.cpu_info(ask_torch=False))
    monkeypatch.setattr(P, "cpu_info", lambda: AMX)
    assert P.set_precision(cfg, "auto") == "bf16"
    assert cfg.optim_wrapper.type == "WSODAmpOptimWrapper"


def test_the_values_and_the_default_are_declared_once():
    import inspect

    from wsod.stages import strong, weak
    from wsod.training import TrainOptions, prepare_config

    for stage in ("weak", "strong"):
        action = stage_actions(stage)["precision"]
        assert tuple(action.choices) == P.PRECISIONS
        assert f"[{P.DEFAULT_PRECISION}]" in action.help
    # the stages' one source of defaults: their options dataclasses, no precision of their own
    for options in (TrainOptions(), weak.WeakOptions(), strong.StrongOptions()):
        assert options.precision == P.DEFAULT_PRECISION
    for fn in (weak.run, strong.run, prepare_config):
        assert "precision" not in inspect.signature(fn).parameters
