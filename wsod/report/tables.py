"""The report's tables and text blocks, from ``metrics.json`` and the run's sidecars.

- :func:`comparison_table` — detectors side by side per class (VOC07 11-point AP@0.5, %), the
  pseudo labels' train-side quality next to them, the strong/weak ratio, the means;
- :func:`verdict` — the plain sentence on strong vs weak mAP (and whether retraining lowered it);
- :func:`provenance_rows` — one row per input file from its ``.meta.json`` sidecar;
- :func:`run_provenance` / :func:`cost_section` — the run's commits and commands, and the cost
  per stage (:mod:`wsod.report.cost`), written into a :class:`~wsod.report.document.Document`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wsod.contracts import ordered_detectors
from wsod.report import cost as run_cost
from wsod.report.document import Document


def fmt(x: Any, pct: bool = True) -> str:
    """A table cell: a fraction as a percentage with one decimal (or a number with two), "–"
    for a missing value."""
    if x is None:
        return "–"
    return f"{x * 100:.1f}" if pct else f"{x:.2f}"


def _sidecar(path: str | os.PathLike | None) -> dict | None:
    if not path:
        return None
    meta = Path(f"{path}.meta.json")
    if not meta.is_file():
        return None
    try:
        return json.loads(meta.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def provenance_rows(files: Mapping[str, str | None]) -> tuple[list[list[str]], list[str]]:
    """``{role: path}`` -> table rows (role, file, stage, command, commit, seed) from each
    file's ``.meta.json`` sidecar, and one ``role: config`` line per sidecar with a config."""
    rows, configs = [], []
    for role, path in files.items():
        if not path:
            continue
        meta = _sidecar(path)
        if meta is None:
            rows.append([role, str(path), "(no .meta.json sidecar)", "", "", ""])
            continue
        cmd = run_cost.short_command(meta.get("command"))  # `wsod ...`, as the rest says
        rows.append(
            [
                role,
                str(path),
                meta.get("stage") or "",
                cmd,
                str(meta.get("git_commit") or "unknown"),
                "–" if meta.get("seed") is None else str(meta["seed"]),  # a stage without one
            ]
        )
        cfg = meta.get("config")
        if cfg:  # whole: a cut config cannot be rerun (html wraps the long lines)
            configs.append(f"{role}: {json.dumps(cfg, sort_keys=True, default=str)}")
    return rows, configs


def mixed_versions(doc: Document, cost: Mapping) -> None:
    """A warning above the results when the run's artifacts come from several commits."""
    found = run_cost.commits(cost) if cost["rows"] else []
    if len(found) > 1:
        doc.callout(
            f"The artifacts of this run were written by {len(found)} different code versions "
            "(see the appendix).",
            warn=True,
        )


def run_provenance(doc: Document, cost: Mapping) -> None:
    """The run's commits and the command line of each stage, from its sidecars (the report's
    appendix; :func:`mixed_versions` warns above the results when the commits differ)."""
    doc.heading("Commands", 3)
    rows = cost["rows"]
    if not rows:
        doc.para(f"No .meta.json sidecars found under the run directory {cost['run_dir']}.")
        return
    found = run_cost.commits(cost)
    listed = "; ".join(f"{c} ({', '.join(stages)})" for c, stages in found)
    doc.para(
        f"Run directory {cost['run_dir']} ({len(rows)} artifacts with a .meta.json sidecar). "
        f"Git commit{'s' if len(found) > 1 else ''}: {listed}."
    )
    doc.code("\n".join(f"{stage}: {cmd}" for stage, cmd in run_cost.commands(cost)))


def cost_section(doc: Document, cost: Mapping) -> None:
    doc.heading("Cost per stage")
    if not cost["rows"]:
        doc.para(f"No .meta.json sidecars found under the run directory {cost['run_dir']}.")
        return
    doc.para(
        "One row per artifact, from its .meta.json sidecar (wall time from the stage's start to "
        "the artifact's writing; peak RSS: the larger of the process and its largest finished "
        "child; n/a: not recorded). start -> end: minutes from the earliest start of any "
        "artifact here, so a run made in one go reads as its timeline (stages that overlap ran "
        "at once) and the last end is its wall time; a run resumed later shows the gap."
    )
    doc.table(*run_cost.cost_table(cost))
    doc.para(
        "Artifacts written by one process share its clock (a proposal .pkl and its .npz twin, "
        "the files of one wsod data run), so the sum above counts that time more than once. Per "
        "stage, with overlapping [written_at - wall time, written_at] intervals counted once:"
    )
    doc.table(*run_cost.stage_table(cost))
    if cost["unreadable"]:
        doc.para(f"Unreadable sidecars skipped: {', '.join(cost['unreadable'])}.")


def per_class_value(entry: Mapping | None, cls: str, *keys: str) -> Any:
    """``entry["per_class"][cls][k0][k1]...`` or None."""
    if not entry:
        return None
    v = (entry.get("per_class") or {}).get(cls)
    for k in keys:
        if not isinstance(v, Mapping):
            return None
        v = v.get(k)
    return v


def comparison_table(metrics: Mapping) -> tuple[list[str], list[list[str]]]:
    """Per-class table, detectors side by side (VOC07 11-point AP@0.5, %).

    Columns: class, #GT, weak, pseudo labels (train-side precision / recall / CorLoc when
    present), strong, fsd (and any other detector), strong/weak. The last rows give the means
    (11-point, area) and COCO AP.
    """
    dets = metrics["detectors"]
    names = ordered_detectors(dets)
    train = metrics.get("train") or {}
    pl = train.get("pseudo_labels")
    header = ["class", "#GT"]
    cols: list[tuple[str, str]] = []
    for n in names:
        if n == "strong" and pl:
            cols.append(("pseudo", "pseudo labels P/R/CorLoc (train)"))
        cols.append(("det", n))
    if pl and "strong" not in names:
        cols.append(("pseudo", "pseudo labels P/R/CorLoc (train)"))
    header += [f"{c} AP" if kind == "det" else c for kind, c in cols]
    has_ratio = "weak" in dets and "strong" in dets
    if has_ratio:
        header.append("strong/weak")
    ref = dets[names[0]]
    rows = []
    for cls in metrics["classes"]:
        row = [cls, str(per_class_value(ref, cls, "num_gt"))]
        for kind, c in cols:
            if kind == "det":
                row.append(fmt(per_class_value(dets[c], cls, "ap_11points")))
            else:
                p = per_class_value(pl, cls, "box_precision")
                r = per_class_value(pl, cls, "box_recall")
                cl = per_class_value(pl, cls, "corloc")
                row.append(f"{fmt(p)} / {fmt(r)} / {fmt(cl)}")
        if has_ratio:
            s = per_class_value(dets["strong"], cls, "ap_11points")
            w = per_class_value(dets["weak"], cls, "ap_11points")
            row.append(f"{s / w:.2f}" if s is not None and w else "–")
        rows.append(row)
    for label, key in (
        ("mAP (11-point)", "mAP_11points"),
        ("mAP (area)", "mAP_area"),
        ("COCO AP 0.5:0.95", None),
    ):
        row = [f"**{label}**", ""]
        for kind, c in cols:
            if kind == "det":
                v = dets[c].get(key) if key else (dets[c].get("coco") or {}).get("AP")
                row.append(fmt(v))
            elif key == "mAP_11points":
                row.append(
                    f"{fmt(pl.get('box_precision'))} / {fmt(pl.get('box_recall'))} / "
                    f"{fmt(pl.get('corloc'))}"
                )
            elif key == "mAP_area":
                row.append(f"AP {fmt(pl.get('mAP_11points'))} (11-pt, train)")
            else:
                row.append("")
        if has_ratio:
            ratio = (metrics.get("ratios") or {}).get("strong/weak") or {}
            rk = key or "coco_AP"
            row.append("–" if ratio.get(rk) is None else f"{ratio[rk]:.2f}")
        rows.append(row)
    return header, rows


def verdict(metrics: Mapping) -> tuple[str, bool] | None:
    """A plain sentence on strong vs weak mAP, and whether retraining lowered it."""
    dets = metrics["detectors"]
    if "weak" not in dets or "strong" not in dets:
        return None
    w, s = dets["weak"]["mAP_11points"], dets["strong"]["mAP_11points"]
    if w is None or s is None:
        return None
    ratio = f" (ratio strong/weak {s / w:.2f})" if w else ""
    if s < w:
        return (
            f"Retraining LOWERED mAP: strong {s * 100:.1f} < weak {w * 100:.1f} "
            f"(VOC07 11-point AP@0.5 on {metrics['split']}){ratio}.",
            True,
        )
    return (
        f"Retraining raised mAP: strong {s * 100:.1f} vs weak {w * 100:.1f} "
        f"(VOC07 11-point AP@0.5 on {metrics['split']}){ratio}.",
        False,
    )
