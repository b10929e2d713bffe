"""Which precision a training stage runs in (``--precision``), chosen by what this CPU computes
fast.

``bf16`` (autocast in training and detection, :mod:`wsod.models.mixed_precision`) pays only
where the CPU has bf16 dot-product instructions: AVX512_BF16 or AMX. oneDNN also offers bf16 on
any AVX-512 CPU (``torch.ops.mkldnn._is_mkldnn_bf16_supported()`` is true there), but it
emulates it, and every stage then runs slower than in fp32
(docs/experiments/2026-12-06-bf16-autocast.md). ``auto`` therefore decides:

1. a GPU in use: fp32 (the bf16 switch here is the CPU's autocast);
2. by the CPU's flags where they tell (:func:`by_flags`): AMX or AVX512_BF16 -> bf16; an x86 CPU
   without them (AVX-512 included) or one oneDNN has no bf16 kernels for -> fp32;
3. elsewhere (e.g. an Arm CPU whose bf16 kernels may or may not beat fp32, or a CPU whose flags
   are unknown) by a short calibration (:func:`calibrate`): a few forward/backward steps of the
   stage's own trunk (backbone + neck) both ways; bf16 only when it is :data:`BF16_MARGIN`
   faster. The result is cached per CPU model, torch version and trunk in
   ``$WSOD_CACHE/precision.json`` (default ``~/.cache/wsod``), so the next stage and a resumed
   run decide alike (the precision is part of a run's fingerprint).

:func:`set_precision` (called by :func:`wsod.training.prepare_config`, the shared first step of
every training stage) prints the choice and why, once per stage run, and every sidecar the
process writes afterwards records it (``precision`` in ``.meta.json``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wsod.training.dist import broadcast, is_main
from wsod.utils.cpu import CpuInfo, cpu_info, describe

PRECISIONS = ("auto", "bf16", "fp32")
"""``--precision`` values: ``bf16`` = autocast in training and detection
(:mod:`wsod.models.mixed_precision`), ``fp32`` = none, ``auto`` = whichever this machine
computes faster (see the module docstring)."""

DEFAULT_PRECISION = "auto"
"""The precision of a training stage that names none (``run``'s default, ``--precision``'s
help, the shipped pipelines)."""

BF16_MARGIN = 1.05
"""The calibration picks bf16 only when its steps are this much faster than fp32's: within
the noise of a few steps fp32 is kept (it is exact and never slower)."""

X86 = ("x86_64", "amd64", "i386", "i686")


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a stage runs in and why.

    Attributes:
        requested: what the stage was asked for (:data:`PRECISIONS`).
        precision: ``bf16`` or ``fp32``.
        by: how it was decided: ``asked``, ``gpu``, ``flags`` or ``calibration``.
        why: one line for the user.
        cpu: the CPU (:func:`wsod.utils.cpu.describe`).
        calibration: seconds per step both ways, when measured (or read from the cache).
    """

    requested: str
    precision: str
    by: str
    why: str
    cpu: str = ""
    calibration: dict | None = field(default=None)

    def record(self) -> dict:
        """A json-ready dict (the sidecars' ``precision``)."""
        return asdict(self)


def by_flags(info: CpuInfo, onednn_bf16: bool) -> tuple[str, str] | None:
    """``(precision, why)`` from the CPU's flags, or None where they cannot tell.

    Args:
        info: the CPU (its ``features``: torch's answer where torch gives one).
        onednn_bf16: whether oneDNN runs bf16 at all (``_is_mkldnn_bf16_supported``: true on any
            AVX-512 CPU, emulated where the CPU lacks bf16 instructions).
    """
    has = info.features
    if not onednn_bf16:
        return "fp32", "oneDNN has no bf16 kernels for this CPU"
    if has.get("amx_bf16"):
        return "bf16", "native bf16: the CPU has AMX tiles"
    if has.get("avx512_bf16"):
        return "bf16", "native bf16: the CPU has AVX512_BF16"
    known = bool(info.torch_checked) or bool(info.proc_flags)
    if info.arch.lower() in X86 and known:
        what = "AVX-512" if has.get("avx512") else "this CPU"
        return "fp32", (
            f"{what} without AVX512_BF16 or AMX: oneDNN would emulate bf16, slower than fp32"
        )
    return None


def pick(fp32_s: float, bf16_s: float, margin: float = BF16_MARGIN) -> tuple[str, str]:
    """``(precision, why)`` from the calibration's seconds per step in fp32 and in bf16."""
    ratio = fp32_s / bf16_s if bf16_s > 0 else 0.0
    if ratio >= margin:
        return "bf16", f"calibration: bf16 steps {ratio:.2f}x as fast as fp32's"
    return "fp32", f"calibration: bf16 steps {ratio:.2f}x as fast as fp32's (< {margin:.2f}x)"


def _onednn_bf16() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def choose_precision(
    precision: str, cfg: Any = None, *, info: CpuInfo | None = None
) -> PrecisionChoice:
    """Resolve ``precision`` for this machine (``auto``: see the module docstring).

    Args:
        precision: one of :data:`PRECISIONS`.
        cfg: the stage's config, for the calibration (its ``model.backbone`` / ``neck`` and
            training input size); None: a CPU that flags cannot tell about keeps fp32.
        info: the CPU (default: this one).

    Raises:
        ValueError: ``precision`` is not one of :data:`PRECISIONS`.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    import torch

    info = info or cpu_info()
    cpu = describe(info)
    if precision != "auto":
        why = f"--precision {precision}"
        flags = by_flags(info, _onednn_bf16()) if precision == "bf16" else None
        if flags is not None and flags[0] == "fp32" and not torch.cuda.is_available():
            why += f" (auto would take fp32 here: {flags[1]})"
        return PrecisionChoice(precision, precision, "asked", why, cpu)
    if torch.cuda.is_available():
        why = "a GPU is in use (bf16 autocast here is the CPU's)"
        return PrecisionChoice("auto", "fp32", "gpu", why, cpu)
    flags = by_flags(info, _onednn_bf16())
    if flags is not None:
        return PrecisionChoice("auto", flags[0], "flags", flags[1], cpu)
    if cfg is None or cfg.get("model") is None:
        why = "flags cannot tell and there is no model to calibrate on"
        return PrecisionChoice("auto", "fp32", "flags", why, cpu)
    timing = cached_calibration(cfg, info)
    chosen, why = pick(timing["fp32_s"], timing["bf16_s"])
    return PrecisionChoice("auto", chosen, "calibration", why, cpu, timing)


def resolve_precision(precision: str, cfg: Any = None) -> str:
    """``auto`` -> ``bf16`` or ``fp32`` for this machine (:func:`choose_precision`)."""
    return choose_precision(precision, cfg).precision


# --------------------------------------------------------------------------- calibration
CALIBRATION_STEPS = 3
"""Timed forward/backward steps each way (after one untimed warm-up step)."""


def cache_file() -> Path:
    """``$WSOD_CACHE/precision.json`` (default ``~/.cache/wsod/precision.json``)."""
    root = os.environ.get("WSOD_CACHE") or Path.home() / ".cache" / "wsod"
    return Path(root) / "precision.json"


def _input_shape(cfg: Any) -> tuple[int, int, int]:
    """``(batch, height, width)`` of a training step: the train dataloader's batch size and
    the largest ``scale``/``scales`` of its pipeline (mmdet's ``(w, h)``), else 2 x 320 x 480."""
    loader = cfg.get("train_dataloader") or {}
    batch = int(loader.get("batch_size") or 2)
    sizes = []
    for step in (loader.get("dataset") or {}).get("pipeline") or []:
        scales = step.get("scales") or ([step["scale"]] if step.get("scale") else [])
        sizes += [tuple(s) for s in scales if isinstance(s, list | tuple) and len(s) == 2]
    w, h = max(sizes, key=lambda s: s[0] * s[1]) if sizes else (480, 320)
    return batch, int(h), int(w)


def _trunk(cfg: Any):
    """The config's backbone (+ neck), built without loading pretrained weights."""
    import copy

    import torch
    from mmdet.registry import MODELS
    from mmengine.registry import DefaultScope

    import wsod.models  # noqa: F401  (registers the project's backbones)

    parts = []
    # in mmdet's scope, as the Runner builds the model (whatever scope the process last set)
    with DefaultScope.overwrite_default_scope("mmdet"):
        for key in ("backbone", "neck"):
            part = copy.deepcopy(cfg.model.get(key))
            if part is None:
                continue
            part = dict(part)
            part.pop("init_cfg", None)
            part.pop("pretrained", None)
            parts.append(MODELS.build(part))
    return torch.nn.Sequential(*parts)


def _loss(out: Any):
    if isinstance(out, list | tuple):
        return sum(_loss(o) for o in out)
    return out.float().mean()


def calibrate(cfg: Any, steps: int = CALIBRATION_STEPS) -> dict:
    """Seconds per forward/backward step of the config's trunk in fp32 and under bf16
    autocast, on random input of a training step's shape (:func:`_input_shape`).

    Returns:
        ``{"fp32_s", "bf16_s", "steps", "input": [batch, 3, h, w], "model"}``.
    """
    import torch

    trunk = _trunk(cfg).train()
    batch, h, w = _input_shape(cfg)
    x = torch.randn(batch, 3, h, w)
    out = {}
    for name, enabled in (("fp32", False), ("bf16", True)):
        seconds = []
        for i in range(steps + 1):
            trunk.zero_grad(set_to_none=True)
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
                y = trunk(x)
            _loss(y).backward()
            if i:  # the first step warms up (oneDNN picks its kernels)
                seconds.append(time.perf_counter() - start)
        out[f"{name}_s"] = round(sorted(seconds)[len(seconds) // 2], 4)
    return {**out, "steps": steps, "input": [batch, 3, h, w], "model": _model_key(cfg)}


def _model_key(cfg: Any) -> str:
    parts = [str((cfg.model.get(k) or {}).get("type")) for k in ("backbone", "neck")]
    return "+".join(p for p in parts if p != "None")


def cache_key(cfg: Any, info: CpuInfo) -> str:
    """The calibration's cache key: CPU model, cores, torch version, trunk and input shape."""
    import torch

    shape = "x".join(map(str, _input_shape(cfg)))
    return f"{info.model}|{info.cores} cores|torch {torch.__version__}|{_model_key(cfg)}|{shape}"


def cached_calibration(cfg: Any, info: CpuInfo) -> dict:
    """:func:`calibrate` once per :func:`cache_key` (rank 0 measures, the other ranks take its
    numbers); the cache file is rewritten atomically and a broken one is measured anew."""
    from wsod.utils.io import write_json

    key, path = cache_key(cfg, info), cache_file()
    timing = None
    if is_main():
        try:
            cache = json.loads(path.read_text())
        except (OSError, ValueError):
            cache = {}
        cache = cache if isinstance(cache, dict) else {}
        timing = cache.get(key)
        if not isinstance(timing, dict) or not {"fp32_s", "bf16_s"} <= set(timing):
            print(f"precision: calibrating fp32 vs bf16 on {key} ...", file=sys.stderr)
            timing = calibrate(cfg)
            cache[key] = timing
            try:
                write_json(path, cache, indent=2)
            except OSError as e:  # a read-only home: measure again next time
                print(f"precision: could not cache the calibration in {path}: {e}", file=sys.stderr)
    return broadcast(timing)


# --------------------------------------------------------------------------- the config switch
def announce(choice: PrecisionChoice) -> None:
    """Print the choice (rank 0) and record it in every sidecar this process writes next."""
    from wsod.utils.io import note_in_provenance

    note_in_provenance("precision", choice.record())
    if is_main():
        asked = "" if choice.by == "asked" else f" ({choice.requested})"
        print(
            f"precision: {choice.precision}{asked}: {choice.why}; CPU: {choice.cpu}",
            file=sys.stderr,
        )


def set_precision(cfg: Any, precision: str, *, error: type[Exception] = ValueError) -> str:
    """Switch a config to bf16 autocast (in place) or leave it fp32; returns the precision used
    and announces it (:func:`announce`).

    bf16: the training loop's ``optim_wrapper`` becomes ``WSODAmpOptimWrapper`` (its optimizer,
    clipping and parameter groups kept), the test loop gets mmengine's ``fp16=True`` (autocast:
    bf16 on a CPU) and ``WSODFp32IslandsHook`` keeps mmcv's fp32-only ops (NMS, RoIAlign) in
    fp32. The switch is part of the resolved config, hence of the run's fingerprint: a run
    trained in another precision is not resumed. A config that already names another optimizer
    wrapper (e.g. mmengine's ``AmpOptimWrapper`` for a GPU) is refused with bf16.
    """
    try:
        choice = choose_precision(precision, cfg)
    except ValueError as e:
        raise error(f"{e} (--precision / the pipeline's precision)") from None
    resolved = choice.precision
    if resolved == "bf16":
        _switch_to_bf16(cfg, error)
    announce(choice)
    return resolved


def _switch_to_bf16(cfg: Any, error: type[Exception]) -> None:
    wrapper = cfg.get("optim_wrapper")
    if wrapper is not None:
        kind = wrapper.get("type", "OptimWrapper")
        if kind not in ("OptimWrapper", "WSODAmpOptimWrapper"):
            raise error(
                f"precision bf16: the config's optim_wrapper is {kind!r}, which has its own "
                "precision; give --precision fp32 to keep it"
            )
        wrapper["type"] = "WSODAmpOptimWrapper"
        wrapper["dtype"] = "bfloat16"
    if cfg.get("test_cfg") is not None:
        cfg.test_cfg["fp16"] = True
    hooks = list(cfg.get("custom_hooks") or [])
    if not any(h.get("type") == "WSODFp32IslandsHook" for h in hooks):
        cfg.custom_hooks = [*hooks, {"type": "WSODFp32IslandsHook"}]
