"""The CPU this process runs on, as every time the project states names it: model, the flags
that decide its speed in PyTorch (AVX-512, VNNI, AVX512_BF16, AMX) and the cores it may use.

:func:`cpu_info` reads ``/proc/cpuinfo`` (Linux; the ``platform`` module elsewhere) and asks
the running torch what it can use (``torch.cpu._is_avx512_bf16_supported`` and friends: cpuinfo's
checks, which also ask the operating system, e.g. whether AMX tiles are enabled). Where torch
answers, its answer is the one that counts (a flag the kernel lists but torch cannot use does
not make bf16 fast); elsewhere the ``/proc/cpuinfo`` flag. :func:`describe` is the one-line form
the sidecars (``.meta.json``), the benchmarks and the docs use.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from wsod.utils.cpu_share import cores

FEATURES = ("avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx_bf16")
"""The features :class:`CpuInfo` reports: AVX-512 (``avx512f``), its int8 dot products
(VNNI), native bf16 dot products (AVX512_BF16) and Intel's matrix tiles for bf16 (AMX)."""

_PROC_FLAGS = {
    "avx2": ("avx2",),
    "avx512": ("avx512f",),
    "avx512_vnni": ("avx512_vnni",),
    "avx512_bf16": ("avx512_bf16",),
    "amx_bf16": ("amx_bf16",),
}
_TORCH_CHECKS = {
    "avx2": "_is_avx2_supported",
    "avx512": "_is_avx512_supported",
    "avx512_vnni": "_is_vnni_supported",
    "avx512_bf16": "_is_avx512_bf16_supported",
    "amx_bf16": "_is_amx_tile_supported",
}


@dataclass(frozen=True)
class CpuInfo:
    """What the project needs to know of a CPU.

    Attributes:
        model: the model name (``/proc/cpuinfo``'s ``model name``, else ``platform``'s).
        arch: ``platform.machine()`` (``x86_64``, ``aarch64``, ...).
        cores: the cores this process may use (its affinity mask).
        features: ``{feature: bool}`` for :data:`FEATURES` (torch's answer where it gives one).
        proc_flags: every flag ``/proc/cpuinfo`` lists (``flags`` on x86, ``Features`` on Arm).
        torch_checked: the features torch answered for (the others come from ``proc_flags``).
    """

    model: str
    arch: str
    cores: int
    features: dict = field(default_factory=dict)
    proc_flags: frozenset = frozenset()
    torch_checked: tuple = ()


def _proc_cpuinfo(path: str | os.PathLike = "/proc/cpuinfo") -> tuple[str | None, frozenset]:
    """``(model name, flags)`` of the first processor listed in ``path`` (None, {} elsewhere)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None, frozenset()
    model, flags = None, frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model", "hardware") and model is None:
            model = value.strip() or None
        elif key in ("flags", "features") and not flags:
            flags = frozenset(value.split())
        if model and flags:
            break
    return model, flags


def _torch_features() -> dict[str, bool]:
    """The features the running torch answers for (an older torch lacks some checks)."""
    try:
        import torch.cpu as tcpu
    except ImportError:
        return {}
    out = {}
    for feature, name in _TORCH_CHECKS.items():
        check = getattr(tcpu, name, None)
        if check is None:
            continue
        try:
            out[feature] = bool(check())
        except (RuntimeError, AttributeError):
            continue
    return out


def cpu_info(ask_torch: bool = True) -> CpuInfo:
    """This machine's :class:`CpuInfo` (read once per process).

    Args:
        ask_torch: also ask torch (imports it); False: only when torch is already imported
            (a sidecar written by a stage that never imports torch, e.g. ``wsod denoise``,
            costs no torch import).
    """
    return _cpu_info(ask_torch or "torch" in sys.modules)


@functools.cache
def _cpu_info(ask_torch: bool) -> CpuInfo:
    model, flags = _proc_cpuinfo()
    torch_says = _torch_features() if ask_torch else {}
    features = {
        f: torch_says.get(f, any(flag in flags for flag in _PROC_FLAGS[f])) for f in FEATURES
    }
    return CpuInfo(
        model=model or platform.processor() or "unknown CPU",
        arch=platform.machine(),
        cores=cores(),
        features=features,
        proc_flags=flags,
        torch_checked=tuple(f for f in FEATURES if f in torch_says),
    )


_NAMES = {
    "avx2": "AVX2",
    "avx512": "AVX-512",
    "avx512_vnni": "VNNI",
    "avx512_bf16": "AVX512_BF16",
    "amx_bf16": "AMX",
}


def describe(info: CpuInfo | None = None) -> str:
    """One line naming the CPU, e.g. ``"Intel(R) Xeon(R) Processor (x86_64; AVX-512, VNNI, no
    AVX512_BF16, no AMX; 2 cores)"``. On a CPU without AVX2 or AVX-512 the x86 flags are left
    out (on an Arm CPU: its ``bf16`` feature, when ``/proc/cpuinfo`` lists features)."""
    info = info or cpu_info()
    has = info.features
    if has.get("avx512") or has.get("avx2"):
        if has.get("avx512"):
            parts = ["AVX-512"] + [
                ("" if has.get(f) else "no ") + _NAMES[f]
                for f in ("avx512_vnni", "avx512_bf16", "amx_bf16")
            ]
        else:
            parts = ["AVX2", "no AVX-512"] + (["AMX"] if has.get("amx_bf16") else [])
        flags = ", ".join(parts)
    elif info.proc_flags:
        flags = "bf16" if "bf16" in info.proc_flags else "no bf16"
    else:
        flags = "flags unknown"
    cores = f"{info.cores} core{'s' * (info.cores != 1)}"
    return f"{info.model} ({info.arch}; {flags}; {cores})"


def as_record(info: CpuInfo | None = None) -> dict:
    """The CPU as a json-ready dict (the sidecars' ``cpu``): ``model``, ``arch``, ``cores``,
    ``features`` and the one-line ``summary`` (:func:`describe`)."""
    info = info or cpu_info(ask_torch=False)
    return {
        "model": info.model,
        "arch": info.arch,
        "cores": info.cores,
        "features": dict(info.features),
        "summary": describe(info),
    }
