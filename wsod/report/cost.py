"""What each stage of a run cost, read back from the ``<artifact>.meta.json`` sidecars.

Every artifact a stage writes has a sidecar (:func:`wsod.utils.io.write_meta`) with ``stage``,
``wall_time_s``, ``peak_rss_mb`` (``{"self": MB, "largest_child": MB}``; missing in older
files), ``git_commit``, ``command`` (``sys.argv``) and ``written_at``
(``%Y-%m-%dT%H:%M:%S%z``). Here they become one row per artifact, the run's commits and the
command line of each stage.

A stage that writes several artifacts from one process times each from the same start (the
proposal ``.pkl`` and its ``.npz`` twin, the four files of ``wsod data``), so the plain sum of
``wall_time_s`` counts that time more than once; :func:`merged_seconds` gives the time covered
by the ``[written_at - wall_time_s, written_at]`` intervals, overlaps counted once.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

META_SUFFIX = ".meta.json"
CHECKPOINT_SUFFIXES = (".pth", ".pt", ".ckpt", ".safetensors")
SKIPPED_DIRS = ("report",)


def _is_checkpoint(artifact: Path) -> bool:
    name = artifact.name.lower()
    return name.endswith(CHECKPOINT_SUFFIXES) or "checkpoint" in name


def find_meta_files(
    run_dir: str | os.PathLike, exclude: Iterable[str | os.PathLike] = ()
) -> list[Path]:
    """Sidecars under ``run_dir``, recursively, sorted by path.

    Skipped: anything under a folder named ``report`` (the report's own outputs), under one of
    ``exclude``, and the sidecars of checkpoints (``*.pth``, ``*.pt``, ``*.ckpt``,
    ``*.safetensors``, mmengine's ``last_checkpoint``).
    """
    run_dir = Path(run_dir)
    excluded = {Path(p).resolve() for p in exclude}
    found = []
    for root, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(
            d for d in dirs if d not in SKIPPED_DIRS and (Path(root) / d).resolve() not in excluded
        )
        for f in files:
            if f.endswith(META_SUFFIX) and not _is_checkpoint(Path(f[: -len(META_SUFFIX)])):
                found.append(Path(root) / f)
    return sorted(found)


def _written_at(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None


def peak_rss(meta: Mapping) -> float | None:
    """Max of ``peak_rss_mb["self"]`` and ``["largest_child"]`` (MB), or None when absent."""
    rss = meta.get("peak_rss_mb")
    if isinstance(rss, (int, float)):
        return float(rss)
    if not isinstance(rss, Mapping):
        return None
    values = [float(v) for v in (rss.get("self"), rss.get("largest_child")) if v is not None]
    return max(values) if values else None


def short_commit(commit: Any) -> str:
    """``"ea343e0"`` from a full hash, keeping a ``-dirty`` suffix; ``"unknown"`` when None."""
    if not commit:
        return "unknown"
    head, dirty, _ = str(commit).partition("-dirty")
    return head[:7] + ("-dirty" if dirty else "")


def short_command(command: Any) -> str:
    """The command line without the interpreter: ``wsod report --metrics ...``.

    ``command`` is ``sys.argv`` (a list) or a string. ``/path/wsod/__main__.py`` (``python -m
    wsod``) becomes ``wsod``; a leading ``python ...`` (and ``-m``) is dropped; any other
    program is kept by its base name.
    """
    if not command:
        return ""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if Path(argv[0]).name.startswith("python"):
        argv = argv[1:]
        if argv[:1] == ["-m"]:
            argv = argv[1:]
        if not argv:
            return ""
    first = Path(argv[0])
    prog = first.parent.name if first.name == "__main__.py" else first.name
    return shlex.join([prog, *argv[1:]])


def format_duration(seconds: float | None) -> str:
    """``"2:15.4 (135.4 s)"`` (minutes:seconds, then seconds); ``"n/a"`` when None."""
    if seconds is None:
        return "n/a"
    tenths = round(float(seconds) * 10)
    minutes, rest = divmod(tenths, 600)
    return f"{minutes}:{rest // 10:02d}.{rest % 10} ({tenths / 10:.1f} s)"


def format_mb(mb: float | None) -> str:
    return "n/a" if mb is None else f"{mb:.1f}"


def read_sidecars(
    run_dir: str | os.PathLike, exclude: Iterable[str | os.PathLike] = ()
) -> Iterator[tuple[str, Mapping | None]]:
    """``(artifact relative to run_dir, its sidecar's dict or None when unreadable)`` for the
    sidecars :func:`find_meta_files` finds."""
    run_dir = Path(run_dir)
    for meta_path in find_meta_files(run_dir, exclude):
        rel = meta_path.relative_to(run_dir).as_posix()[: -len(META_SUFFIX)]
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            meta = None
        yield rel, meta if isinstance(meta, Mapping) else None


def collect(run_dir: str | os.PathLike, exclude: Iterable[str | os.PathLike] = ()) -> dict:
    """Read the run's sidecars.

    Returns:
        ``{"run_dir": str, "rows": [...], "unreadable": [relative paths],
        "total_wall_time_s": float, "merged_wall_time_s": float, "span_s": (start, end) | None
        (epoch seconds, see :func:`envelope`), "max_peak_rss_mb": float | None}``; each row is
        ``{"stage", "artifact" (relative to ``run_dir``), "wall_time_s", "peak_rss_mb",
        "git_commit", "written_at", "command"}``, sorted by ``written_at`` (rows without a
        readable time last), then by artifact.
    """
    rows, unreadable = [], []
    for rel, meta in read_sidecars(run_dir, exclude):
        if meta is None:
            unreadable.append(rel)
            continue
        wall = meta.get("wall_time_s")
        rows.append(
            {
                "stage": str(meta.get("stage") or "?"),
                "artifact": rel,
                "wall_time_s": None if wall is None else float(wall),
                "peak_rss_mb": peak_rss(meta),
                "git_commit": meta.get("git_commit"),
                "written_at": meta.get("written_at"),
                "command": short_command(meta.get("command")),
            }
        )

    def order(row: dict) -> tuple:
        t = _written_at(row["written_at"])
        return (t is None, t.timestamp() if t else 0.0, row["artifact"])

    rows.sort(key=order)
    rss = [r["peak_rss_mb"] for r in rows if r["peak_rss_mb"] is not None]
    return {
        "run_dir": str(run_dir),
        "rows": rows,
        "unreadable": unreadable,
        "total_wall_time_s": round(sum(r["wall_time_s"] or 0.0 for r in rows), 3),
        "merged_wall_time_s": merged_seconds(rows),
        "span_s": envelope(rows),
        "max_peak_rss_mb": max(rss) if rss else None,
    }


def interval(row: Mapping) -> tuple[float, float] | None:
    """``(start, end)`` in epoch seconds: ``[written_at - wall_time_s, written_at]``, or None
    when either is missing or unreadable."""
    wall, end = row.get("wall_time_s"), _written_at(row.get("written_at"))
    if wall is None or end is None:
        return None
    return end.timestamp() - float(wall), end.timestamp()


def format_span(span: tuple[float, float] | None, origin: float | None) -> str:
    """``"2.9 -> 9.9"``: start and end in minutes from ``origin``; ``"n/a"`` without a span."""
    if span is None or origin is None:
        return "n/a"
    return f"{(span[0] - origin) / 60:.1f} -> {(span[1] - origin) / 60:.1f}"


def envelope(rows: Sequence[Mapping]) -> tuple[float, float] | None:
    """``(first start, last end)`` of the rows' intervals (:func:`interval`; epoch seconds), or
    None when no row has one. The run's first start is the origin of the ``start -> end``
    columns."""
    spans = [iv for iv in map(interval, rows) if iv is not None]
    return (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None


def merged_seconds(rows: Sequence[Mapping]) -> float:
    """Seconds covered by the rows' ``[written_at - wall_time_s, written_at]`` intervals, overlaps
    counted once (rows without a time or a parseable ``written_at`` are added as they are)."""
    spans, loose = [], 0.0
    for r in rows:
        if r.get("wall_time_s") is None:
            continue
        span = interval(r)
        if span is None:
            loose += float(r["wall_time_s"])
        else:
            spans.append(span)
    total, cur = loose, None
    for start, end in sorted(spans):
        if cur is not None and start <= cur[1]:
            cur[1] = max(cur[1], end)
            continue
        if cur is not None:
            total += cur[1] - cur[0]
        cur = [start, end]
    if cur is not None:
        total += cur[1] - cur[0]
    return round(total, 3)


def cost_table(cost: Mapping) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report's table: one row per artifact, then the total (sum of the
    rows' wall times) and the max peak RSS. ``start -> end`` is in minutes from the run's
    earliest start (``cost["span_s"]``): for a run made in one go it is its timeline."""
    header = [
        "stage",
        "artifact",
        "wall time (m:s)",
        "start -> end (min)",
        "peak RSS (MB)",
        "git commit",
        "written at",
    ]
    span = cost["span_s"]
    origin = span[0] if span else None
    rows = [
        [
            r["stage"],
            r["artifact"],
            format_duration(r["wall_time_s"]),
            format_span(interval(r), origin),
            format_mb(r["peak_rss_mb"]),
            short_commit(r["git_commit"]),
            str(r["written_at"] or "n/a"),
        ]
        for r in cost["rows"]
    ]
    rows.append(
        [
            "**total**",
            f"{len(cost['rows'])} artifacts (sum of wall times)",
            format_duration(cost["total_wall_time_s"]),
            format_span(span, origin),
            f"max {format_mb(cost['max_peak_rss_mb'])}",
            "",
            "",
        ]
    )
    return header, rows


def stage_table(cost: Mapping) -> tuple[list[str], list[list[str]]]:
    """One row per stage (in order of first artifact): artifacts, wall time with the overlaps of
    one process's artifacts counted once, first start -> last end (minutes from the run's
    start), max peak RSS."""
    span = cost["span_s"]
    origin = span[0] if span else None
    by_stage: dict[str, list[Mapping]] = {}
    for r in cost["rows"]:
        by_stage.setdefault(r["stage"], []).append(r)
    rows = []
    for stage, rs in by_stage.items():
        rss = [r["peak_rss_mb"] for r in rs if r["peak_rss_mb"] is not None]
        timed = [r for r in rs if r["wall_time_s"] is not None]
        rows.append(
            [
                stage,
                str(len(rs)),
                format_duration(merged_seconds(rs) if timed else None),
                format_span(envelope(rs), origin),
                format_mb(max(rss) if rss else None),
            ]
        )
    rows.append(
        [
            "**run**",
            str(len(cost["rows"])),
            format_duration(cost["merged_wall_time_s"]),
            format_span(span, origin),
            format_mb(cost["max_peak_rss_mb"]),
        ]
    )
    header = [
        "stage",
        "artifacts",
        "wall time, overlaps once (m:s)",
        "start -> end (min)",
        "peak RSS (MB)",
    ]
    return header, rows


def commits(cost: Mapping) -> list[tuple[str, list[str]]]:
    """``[(short commit, [stages])]`` in order of first appearance."""
    out: dict[str, list[str]] = {}
    for r in cost["rows"]:
        stages = out.setdefault(short_commit(r["git_commit"]), [])
        if r["stage"] not in stages:
            stages.append(r["stage"])
    return list(out.items())


def commands(cost: Mapping) -> list[tuple[str, str]]:
    """``[(stage, command line)]``, each distinct pair once, in order of first appearance."""
    seen: list[tuple[str, str]] = []
    for r in cost["rows"]:
        pair = (r["stage"], r["command"] or "(no command recorded)")
        if pair not in seen:
            seen.append(pair)
    return seen
