"""How long a run will take on this machine, predicted from a quick look's measured steps.

A quick look (``make all QUICK=1``: every stage on a few images a split, every training a few
iterations) writes the same sidecars as a real run (:mod:`wsod.report.cost`), and the training
flow's step timer adds what each step took (``train_steps``, ``test_steps``:
:mod:`wsod.models.step_timer_hook`). Each stage process of the quick look becomes:

- start-up: its time (first start to last end of its artifacts) minus the time spent in timed steps (imports, model
  building, loading weights, writing files): the same in the real run;
- training: the real run's iterations x the median seconds of the quick look's iterations, per
  phase of a two-phase schedule (the black box's affinity phase runs at its own rate);
- detection: the real split's images x the quick look's seconds per image;
- proposals: their wall time x the ratio of the real split's images to the quick look's
  (selective search costs per image);
- the other untimed stages (data, de-noise, rescore, evaluate): their wall time as it was (a few
  seconds of start-up each; their work per image is small next to it, and next to the run).

The prediction is for ``make all`` run one stage at a time (the sum of the stages). ``make -j2
all`` overlaps stages: :func:`two_jobs_seconds` gives a coarse figure for it (the longer of the
chain of stages that wait for each other and the whole work at two jobs' throughput). :func:`compare` sets the prediction beside what a run
took, stage by stage (the real run's sidecars).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wsod.report.cost import (
    META_SUFFIX,
    envelope,
    format_duration,
    merged_seconds,
    read_sidecars,
)

SCALED_STAGES = ("proposals",)
"""Untimed stages whose time grows with the images (the others keep their quick-look time)."""


def split_of(artifact: str) -> str:
    """The split an artifact concerns, by its name: ``train`` or ``val`` (``proposals/train.pkl``,
    ``weak/val_dets.json``; a model trains on ``train``)."""
    name = Path(artifact).name
    return "val" if name.startswith("val") or "_val" in name else "train"


def phase_rates(seconds: list[float], phase_start: int | None) -> list[float]:
    """Median seconds per iteration of each phase (one phase, or two split at
    ``phase_start``); a phase the quick look did not reach takes the other's rate."""
    first = seconds[:phase_start] if phase_start else seconds
    rest = seconds[phase_start:] if phase_start else []
    rates = [statistics.median(p) for p in (first, rest) if p]
    return rates if phase_start is None or len(rates) == 2 else rates * 2


def phase_start_of(config: Mapping) -> int | None:
    """The first iteration of a config's affinity phase (``WSODAffinityPhaseHook``), or None."""
    for hook in config.get("custom_hooks") or []:
        if str(hook.get("type", "")).endswith("WSODAffinityPhaseHook"):
            return int(hook.get("start_iter", 0))
    return None


def _training(meta: Mapping, full: Mapping) -> tuple[float, float]:
    """``(seconds in timed steps, predicted seconds of the real run's steps)`` of a training
    row; ``full``: ``{"iters", "phase_start"}`` of the real run."""
    steps = meta["train_steps"]
    seconds = list(steps.get("seconds") or [])
    if len(seconds) < steps["steps"]:  # more steps than kept: one rate
        seconds = [steps["median_s"]] * steps["steps"]
    rates = phase_rates(seconds, phase_start_of(meta.get("config") or {}))
    iters, start = int(full["iters"]), full.get("phase_start")
    if len(rates) == 2 and start is not None:
        predicted = start * rates[0] + (iters - start) * rates[1]
    else:
        predicted = iters * rates[0]
    return float(steps["total_s"]), predicted


def _detection(meta: Mapping, images: int) -> tuple[float, float]:
    steps = meta["test_steps"]
    per_image = steps["total_s"] / max(1, steps.get("units") or steps["steps"])
    return float(steps["total_s"]), images * per_image


def read_rows(run_dir: str | Path) -> list[dict]:
    """The run's sidecars as ``{"artifact", "stage", "command", "meta"}`` rows."""
    rows = []
    for rel, meta in read_sidecars(run_dir):
        if meta is None:
            raise ValueError(f"{Path(run_dir) / rel}{META_SUFFIX}: unreadable sidecar")
        command = " ".join(map(str, meta.get("command") or [rel]))
        rows.append({"artifact": rel, "stage": meta.get("stage", "?"), "command": command,
                     "meta": meta})  # fmt: skip
    return rows


def _processes(rows: list[dict]) -> list[list[dict]]:
    """The rows grouped by stage process (its stage and command line), in order."""
    by_process: dict[tuple, list[dict]] = {}
    for r in rows:
        by_process.setdefault((r["stage"], r["command"]), []).append(r)
    return list(by_process.values())


def process_seconds(group: list[dict]) -> float:
    """A stage process's time from its sidecars: first start to last end
    (:func:`wsod.report.cost.envelope`: the gaps between its artifacts, e.g. building the
    detector after training, count), else the sum of the wall times."""
    times = [{"wall_time_s": r["meta"].get("wall_time_s"),
              "written_at": r["meta"].get("written_at")} for r in group]  # fmt: skip
    span = envelope(times)
    return span[1] - span[0] if span else merged_seconds(times)


def predict(quick_dir: str | Path, images: Mapping[str, int], trainings: Mapping) -> dict:
    """Predict the real run's stage times from a quick look's sidecars.

    Args:
        quick_dir: the quick look's run folder (``work_dirs/<pipeline>_quick``).
        images: the real run's images per split, ``{"train": N, "val": M}``.
        trainings: per training's model record (``weak/weak_model.json``, ...), the real run's
            ``{"iters", "phase_start"}``.

    Returns:
        ``{"processes": [{"stage", "artifacts", "quick_s", "startup_s", "predicted_s"}],
        "between_s" (the time between the stages), "total_s" (one stage at a time: the
        processes and the time between them), "two_jobs_s" (:func:`two_jobs_seconds`), "images",
        "quick_images", "cpu"}``; one entry per stage process (its stage and command line).
    """
    rows = read_rows(quick_dir)
    if not rows:
        raise FileNotFoundError(f"{quick_dir}: no sidecars; run the quick look (make estimate)")
    quick_images = _quick_images(rows)
    processes = []
    for group in _processes(rows):
        wall = process_seconds(group)
        timed, predicted = 0.0, 0.0
        for r in group:
            meta, split = r["meta"], split_of(r["artifact"])
            if "train_steps" in meta and r["artifact"] in trainings:
                t, p = _training(meta, trainings[r["artifact"]])
            elif "test_steps" in meta:
                t, p = _detection(meta, images[split])
            else:
                continue
            timed, predicted = timed + t, predicted + p
        startup = max(0.0, wall - timed)
        if timed == 0.0 and group[0]["stage"] in SCALED_STAGES:  # per image of its split
            split = split_of(group[0]["artifact"])
            startup, predicted = 0.0, wall * images[split] / max(1, quick_images[split])
        processes.append({"stage": group[0]["stage"],
                          "artifacts": [r["artifact"] for r in group], "quick_s": round(wall, 1),
                          "startup_s": round(startup, 1),
                          "predicted_s": round(startup + predicted, 1)})  # fmt: skip
    cpu = next((r["meta"]["cpu"]["summary"] for r in rows if "cpu" in r["meta"]), "not recorded")
    # between the stages (interpreter start-up and imports before a stage's clock starts, make,
    # the pipeline check): the quick look's first start to last end minus its stages, when it
    # ran one stage at a time (as `make estimate` runs it); as long in the real run
    between = max(0.0, process_seconds(rows) - sum(p["quick_s"] for p in processes))
    total = round(sum(p["predicted_s"] for p in processes) + between, 1)
    return {"processes": processes, "between_s": round(between, 1), "total_s": total,
            "two_jobs_s": two_jobs_seconds(processes),
            "images": dict(images), "quick_images": quick_images, "cpu": cpu}  # fmt: skip


TWO_JOBS_THROUGHPUT = 1.44
"""Work done by two stages at once on a 2-core machine, per unit of one alone (CPU slots, one
thread each: ``benchmarks/cpu_share.py --oversubscribed``,
docs/experiments/2026-12-04-two-stages-at-once.md)."""

# the chain `make -j2 all` cannot overlap: each waits for the one before (the black box's
# training may run beside the proposals: the longer of the two counts)
_CHAIN = ("data/", "weak/train_dets", "denoise/", "strong/", "eval/")


def two_jobs_seconds(processes: list[Mapping], throughput: float = TWO_JOBS_THROUGHPUT) -> float:
    """A coarse ``make -j2 all`` wall time: the longer of the chain (data, the longer of the
    proposals and the black box's training, its detections, de-noise, the strong detector,
    evaluate) and the whole work done at ``throughput`` times one stage's pace."""

    def seconds(prefix: str) -> float:
        return sum(p["predicted_s"] for p in processes if p["artifacts"][0].startswith(prefix))

    weak_train = sum(
        p["predicted_s"] for p in processes if "weak/weak_model.json" in p["artifacts"]
    )
    chain = sum(seconds(prefix) for prefix in _CHAIN) + max(seconds("proposals/"), weak_train)
    total = sum(p["predicted_s"] for p in processes)
    return round(max(chain, total / throughput), 1)


def _quick_images(rows: list[dict]) -> dict[str, int]:
    """Images per split of the quick look: its detections' ``test_steps`` units, else its
    proposal files' inputs (the split json's ``info.num_images`` is not in the sidecar)."""
    out: dict[str, int] = {}
    for r in rows:
        steps = r["meta"].get("test_steps")
        if steps and steps.get("units"):
            out.setdefault(split_of(r["artifact"]), int(steps["units"]))
    return {
        "train": out.get("train", out.get("val", 1)),
        "val": out.get("val", out.get("train", 1)),
    }


def format_estimate(est: Mapping) -> str:
    """The prediction as text: one line per stage process, then the whole run."""
    lines = [f"Estimate for this machine ({est['cpu']}), make all one stage at a time:"]
    for p in est["processes"]:
        lines.append(f"  {p['stage']:9s} {format_duration(p['predicted_s']):>22s}  "
                     f"({', '.join(p['artifacts'][:2])}{', ...' * (len(p['artifacts']) > 2)})")  # fmt: skip
    if est.get("between_s"):
        lines.append(f"  {'between':9s} {format_duration(est['between_s']):>22s}  (start-up, make)")
    lines.append(f"  {'whole run':9s} {format_duration(est['total_s']):>22s}")
    if est.get("two_jobs_s"):
        lines.append(f"  (make -j2 all, coarse: {format_duration(est['two_jobs_s'])})")
    return "\n".join(lines)


def compare(est: Mapping, rows: list[dict]) -> list[dict]:
    """The prediction beside what the run took, per stage and for the whole run.

    Args:
        est: :func:`predict`'s result.
        rows: :func:`read_rows` of the real run.

    Returns:
        ``[{"stage", "predicted_s", "actual_s", "ratio"}]`` (ratio = actual / predicted), the
        stages in the prediction's order (actual: the sum of the stage's processes, each first
        start to last end, as predicted), then ``whole run`` (actual: the run's first start to
        its last end) and, beside the same actual, the coarse ``make -j2`` figure.
    """
    actual: dict[str, float] = {}
    for group in _processes(rows):
        stage = group[0]["stage"]
        actual[stage] = actual.get(stage, 0.0) + process_seconds(group)
    predicted: dict[str, float] = {}
    for p in est["processes"]:
        predicted[p["stage"]] = predicted.get(p["stage"], 0.0) + p["predicted_s"]
    out = [_compared(stage, seconds, actual.get(stage)) for stage, seconds in predicted.items()]
    wall = process_seconds(rows) if rows else None
    out.append(_compared("whole run", est["total_s"], wall))
    if est.get("two_jobs_s"):
        out.append(_compared("whole run, make -j2 (coarse)", est["two_jobs_s"], wall))
    return out


def _compared(stage: str, predicted: float, actual: Any) -> dict:
    ratio = None if not actual or not predicted else round(float(actual) / predicted, 2)
    return {"stage": stage, "predicted_s": round(predicted, 1),
            "actual_s": None if actual is None else round(float(actual), 1), "ratio": ratio}  # fmt: skip
