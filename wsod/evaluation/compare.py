"""Put a run's mAP beside a published headline (or another run) with the run-to-run spread.

Re-making a published number gives another draw, not a replay: the strong detector's val mAP
moves by up to 5 points with nothing but the training seed or the thread count changed
(docs/experiments/2026-12-03-strong-seed-spread.md). A difference means something only beyond
that spread, so each row says whether it is.

Inputs are plain dicts: ``{detector: {"mAP_11points": x, "mAP_area": y}}`` with fractions in
[0, 1], as in ``metrics.json``'s ``detectors``. :func:`headline_from_markdown` reads the
headline table of ``docs/results.md`` (percent) into that form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SPREAD_DOC = "docs/experiments/2026-12-03-strong-seed-spread.md"
"""Where the run-to-run spread below was measured."""

SEED_SPREAD = {
    # strong (cpu-4e) over four trainings on the same pseudo labels: 14.0 +- 2.6 mAP (11-point)
    "strong": 0.026,
    # the same four, x the black box's class probability: 17.7 +- 1.5
    "strong_rescored": 0.015,
    # the fully supervised reference over three trainings: 32.4 +- 1.8 (its rescored row was
    # not measured over seeds: the same spread is assumed)
    "fsd": 0.018,
    "fsd_rescored": 0.018,
    # the black box: deterministic for a seed; 21.0 vs 21.1 across code versions, 29.1 vs 28.8
    # from scratch (README): 0.3 points
    "weak": 0.003,
}
"""Run-to-run standard deviation of each detector's val mAP (fractions), from
:data:`SPREAD_DOC`. A self-training round's detector (``strong_round<r>``) takes strong's."""

BEYOND = 2.0
"""A difference counts as beyond the spread when it exceeds ``BEYOND`` x the standard
deviation (two single runs of the same code differ by more about 1 time in 6)."""

METRICS = ("mAP_11points", "mAP_area")


def spread_of(detector: str) -> float | None:
    """The documented run-to-run sd of ``detector``'s mAP, or None when none was measured."""
    if detector in SEED_SPREAD:
        return SEED_SPREAD[detector]
    if detector.startswith("strong_round"):
        return SEED_SPREAD["strong"]
    return None


def headline_from_markdown(text: str) -> dict[str, dict[str, float]]:
    """The headline table of ``docs/results.md``: its ``| class | ... | weak AP | ... |`` header
    names the detectors (``<name> AP`` columns), its ``**mAP (11-point)**`` and ``**mAP
    (area)**`` rows their values (percent in the file, fractions here).

    Raises:
        ValueError: no such table in ``text``.
    """
    lines = [ln.strip() for ln in text.splitlines()]
    header = next((ln for ln in lines if ln.startswith("| class |") and " AP |" in ln), None)
    if header is None:
        raise ValueError("no headline table (a '| class | ... | weak AP |' header) found")
    cells = [c.strip() for c in header.strip("|").split("|")]
    columns = {i: c[: -len(" AP")] for i, c in enumerate(cells) if c.endswith(" AP")}
    out: dict[str, dict[str, float]] = {name: {} for name in columns.values()}
    for key, label in (("mAP_11points", "**mAP (11-point)**"), ("mAP_area", "**mAP (area)**")):
        row = next((ln for ln in lines if ln.startswith(f"| {label} |")), None)
        if row is None:
            continue
        values = [c.strip() for c in row.strip("|").split("|")]
        for i, name in columns.items():
            number = (
                re.fullmatch(r"\*{0,2}(\d+(?:\.\d+)?)\*{0,2}", values[i])
                if i < len(values)
                else None
            )
            if number:
                out[name][key] = float(number.group(1)) / 100
    return {name: v for name, v in out.items() if v}


def detector_values(metrics: Mapping) -> dict[str, dict[str, float]]:
    """``{detector: {mAP_11points, mAP_area}}`` of a ``metrics.json`` (detectors with a number)."""
    out = {}
    for name, entry in (metrics.get("detectors") or {}).items():
        values = {k: entry[k] for k in METRICS if isinstance(entry.get(k), int | float)}
        if values:
            out[name] = values
    return out


def compare(ours: Mapping, reference: Mapping, beyond: float = BEYOND) -> list[dict]:
    """One row per detector and metric present in both: the two values, their difference, the
    allowed spread (``beyond`` x :func:`spread_of`) and whether the difference is beyond it
    (None when no spread was measured for that detector)."""
    rows = []
    for name in ours:
        if name not in reference:
            continue
        sd = spread_of(name)
        for key in METRICS:
            if key not in ours[name] or key not in reference[name]:
                continue
            diff = ours[name][key] - reference[name][key]
            allowed = None if sd is None else beyond * sd
            rows.append(
                {
                    "detector": name,
                    "metric": key,
                    "run": ours[name][key],
                    "reference": reference[name][key],
                    "difference": diff,
                    "allowed": allowed,
                    "beyond": None if allowed is None else abs(diff) > allowed + 1e-9,
                }
            )
    return rows


def format_rows(rows: list[dict], reference_name: str) -> list[str]:
    """The comparison as aligned text lines (mAP in %), with one verdict line at the end."""
    head = f"{'detector':<18} {'metric':<13} {'this run':>8} {reference_name[:12]:>12} "
    lines = [head + f"{'diff':>6} {'spread':>7}  verdict"]
    for r in rows:
        allowed = "-" if r["allowed"] is None else f"+-{r['allowed'] * 100:.1f}"
        verdict = {None: "no spread measured", True: "BEYOND the spread", False: "within"}
        lines.append(
            f"{r['detector']:<18} {r['metric']:<13} {r['run'] * 100:>8.1f} "
            f"{r['reference'] * 100:>12.1f} {r['difference'] * 100:>+6.1f} {allowed:>7}  "
            f"{verdict[r['beyond']]}"
        )
    beyond = [f"{r['detector']} {r['metric']}" for r in rows if r["beyond"]]
    lines.append(
        f"{len(beyond)} of {len(rows)} differences beyond {BEYOND:g} x the run-to-run sd "
        f"({SPREAD_DOC})" + (f": {', '.join(beyond)}" if beyond else "")
    )
    return lines
