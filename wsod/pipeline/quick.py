"""The quick-look pipeline (``make all QUICK=1``): see :mod:`wsod.pipeline`."""

from __future__ import annotations

import os
from pathlib import Path

from wsod.pipeline.core import load_pipeline, weak_config, write_if_changed

QUICK_IMAGES = 24  # per split (data.limit): the first images of each split
QUICK_ITERS = 10  # weak and strong (and fsd, rounds) training iterations
QUICK_BOXES = 200  # proposals per image


def quick_pipeline_text(path: str | os.PathLike) -> str:
    """A pipeline that inherits ``path`` and shrinks it to a quick look: ``data.limit``,
    ``proposals.max_boxes``, ``max_iters`` of the weak and strong stages and, for a two-phase
    black box, the affinity phase's start (the last fifth; ``weak.affinity_start_iter``). The
    report says it is a quick look of ``path`` and names the full run (``report.quick_look``)."""
    from wsod.models.affinity_phase_hook import PHASE_OPTION, phase_hook

    pipeline = load_pipeline(path)
    weak_cfg = weak_config(pipeline)
    phase = f", {PHASE_OPTION}={QUICK_ITERS * 4 // 5}" if weak_cfg and phase_hook(weak_cfg) else ""
    return "\n".join(
        [
            f"# the quick look of {path}: written by `python -m wsod.pipeline --quick`; do not"
            " edit (make all QUICK=1)",
            f"_base_ = [{str(Path(path).resolve())!r}]",
            f"data = dict(limit={QUICK_IMAGES})",
            f"proposals = dict(max_boxes={QUICK_BOXES})",
            f"weak = dict(max_iters={QUICK_ITERS}{phase})",
            f"strong = dict(max_iters={QUICK_ITERS})",
            f"report = dict(quick_look={str(path)!r})",
            "",
        ]
    )


def write_quick_pipeline(path: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Write :func:`quick_pipeline_text` to ``out`` (only where its content changed)."""
    out = Path(out)
    write_if_changed(out, quick_pipeline_text(path))
    return out
