"""The table step of ``benchmarks/oracle_labels.py`` (``oracle_labels.py table``): one markdown
table of detectors trained on different train labels, evaluated on val.

Each row is a name and one or more ``metrics.json`` files from ``wsod evaluate`` (one per seed),
each ``METRICS[:DETECTOR]`` (``DETECTOR``: which of the file's detectors; may be left out when
the file holds one). Per row: the seeds' mean of the val mAP (VOC07 11-point and area), with the
sample standard deviation (n - 1) where there are two or more; the difference of the 11-point
mAP to the first row; the top-detection error breakdown of ``benchmarks/detection_errors.py``
(:func:`detection_errors.classify`: each class's n_c highest-scoring detections against the val
ground truth, shares in %) on the detections each metrics entry names (its ``file``); and the
11-point AP of each class. Errors and per-class AP are the seeds' means.

It reads the evaluation split's ground-truth boxes (``<run>/data/val_gt.json``): an evaluation
tool.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.detection_errors import ROWS as ERRORS  # noqa: E402
from benchmarks.detection_errors import classify  # noqa: E402
from wsod.contracts import load_detections, load_metrics  # noqa: E402
from wsod.evaluation.gt import load_gt  # noqa: E402


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """``METRICS[:DETECTOR]`` -> (path, detector or None)."""
    path, sep, detector = spec.rpartition(":")
    if sep and path and detector and "/" not in detector and not detector.endswith(".json"):
        return Path(path), detector
    return Path(spec), None


def _detections_path(file: str, metrics_path: Path) -> Path:
    """A metrics entry's ``file``: as written (relative to the current folder), else relative
    to the metrics file's folder."""
    path = Path(file)
    if path.is_file() or path.is_absolute():
        return path
    return metrics_path.parent / path if (metrics_path.parent / path).is_file() else path


def read_entry(spec: str) -> tuple[dict, list[str], Path]:
    """(detector entry, the file's classes, its detections file) of one ``METRICS[:DETECTOR]``.

    Raises:
        ValueError: no such detector, several and none named, or a missing detections file
            (the message names the file and the fix).
    """
    path, detector = parse_spec(spec)
    metrics = load_metrics(path)
    names = list(metrics["detectors"])
    if detector is None:
        if len(names) != 1:
            raise ValueError(f"{path}: holds detectors {names}; name one: {path}:<detector>")
        detector = names[0]
    if detector not in names:
        raise ValueError(f"{path}: no detector {detector!r} (it holds {names})")
    entry = metrics["detectors"][detector]
    dets = _detections_path(entry["file"], path)
    if not dets.is_file():
        raise ValueError(
            f"{path}: detector {detector!r}'s detections {entry['file']} not found; run this "
            "from the folder `wsod evaluate` ran in"
        )
    return entry, list(metrics["classes"]), dets


def row_values(specs: list[str], gt: dict) -> dict:
    """Per-seed values of one row: ``map11``, ``map_area`` (lists, %), ``ap`` (class -> list,
    %), ``errors`` (error row -> list of shares, %), ``classes``."""
    out: dict = {"map11": [], "map_area": [], "ap": {}, "errors": {r: [] for r in ERRORS}}
    for spec in specs:
        entry, classes, dets = read_entry(spec)
        out["classes"] = classes
        out["map11"].append(100 * (entry["mAP_11points"] or 0.0))
        out["map_area"].append(100 * (entry["mAP_area"] or 0.0))
        for name in classes:
            ap = (entry["per_class"].get(name) or {}).get("ap_11points")
            out["ap"].setdefault(name, []).append(100 * (ap or 0.0))
        errors, _ = classify(load_detections(dets), gt)
        total = max(sum(errors.values()), 1)
        for r in ERRORS:
            out["errors"][r].append(100 * errors[r] / total)
    return out


def mean_sd(values: list[float]) -> str:
    """``mean`` (one value) or ``mean ± sd`` (sample standard deviation, n - 1), one decimal."""
    v = np.asarray(values, np.float64)
    return f"{v.mean():.1f}" if len(v) < 2 else f"{v.mean():.1f} ± {v.std(ddof=1):.1f}"


def format_table(rows: dict[str, dict]) -> str:
    """Markdown: one line per row (name -> :func:`row_values`), in the given order."""
    classes = next(iter(rows.values()))["classes"]
    first = float(np.mean(next(iter(rows.values()))["map11"]))
    head = ["train labels", "seeds", "mAP 11-pt", "mAP area", "Δ 11-pt", *ERRORS, *classes]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, r in rows.items():
        if r["classes"] != classes:
            raise ValueError(f"row {name!r}: classes {r['classes']} differ from {classes}")
        cells = [name, str(len(r["map11"])), mean_sd(r["map11"]), mean_sd(r["map_area"])]
        cells.append(f"{np.mean(r['map11']) - first:+.1f}")
        cells += [f"{np.mean(r['errors'][e]):.1f}" for e in ERRORS]
        cells += [f"{np.mean(r['ap'][c]):.1f}" for c in classes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gt", required=True, help="the evaluation split's <split>_gt.json")
    p.add_argument(
        "--row",
        nargs="+",
        action="append",
        required=True,
        metavar=("NAME", "METRICS[:DETECTOR]"),
        help="a row: its name, then one metrics.json per seed (repeatable, in table order)",
    )
    p.add_argument("--out", help="write the table here too (markdown)")


def table_main(args: argparse.Namespace) -> int:
    gt = load_gt(args.gt)
    rows = {}
    for name, *specs in args.row:
        if not specs:
            raise SystemExit(f"--row {name!r}: give one metrics.json per seed after the name")
        rows[name] = row_values(specs, gt)
    text = (
        f"val mAP (%, {args.gt}): mean over seeds ± sample sd; Δ: to the first row; errors: "
        "share of each class's n_c top detections (benchmarks/detection_errors.py); per class: "
        "11-point AP\n\n" + format_table(rows) + "\n"
    )
    print(text, end="")
    if args.out:
        os.makedirs(Path(args.out).parent, exist_ok=True)
        Path(args.out).write_text(text)
    return 0
