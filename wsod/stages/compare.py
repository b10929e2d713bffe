"""Compare stage: a run's metrics beside a published headline or another run, with the
documented run-to-run spread (reproducibility check; ``wsod compare``, ``make check``).

Inputs:
    ``metrics``: a run's ``eval/metrics.json`` (``wsod evaluate``);
    ``against``: ``docs/results.md`` (its headline table, the default) or another run's
    ``metrics.json``.

Output: the rows (detector, metric, both values, difference, allowed spread, verdict) and their
text lines; with ``out``, a json of the rows (written atomically with a ``.meta.json``). The
spread and the rule are :mod:`wsod.evaluation.compare`'s. Reads no ground truth.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from wsod import contracts
from wsod.evaluation.compare import (
    BEYOND,
    SPREAD_DOC,
    compare,
    detector_values,
    format_rows,
    headline_from_markdown,
)
from wsod.utils.io import write_json_artifact


class CompareError(ValueError):
    """Bad input to the compare stage; the message names the file and the fix."""


def _reference(against: Path) -> dict:
    if not against.is_file():
        raise CompareError(
            f"{against}: no such file; give docs/results.md (the published headline) or "
            "another run's eval/metrics.json"
        )
    if against.suffix == ".md":
        try:
            return headline_from_markdown(against.read_text())
        except ValueError as e:
            raise CompareError(f"{against}: {e}") from None
    return detector_values(contracts.load_metrics(against))


def run(
    metrics: str | os.PathLike,
    *,
    against: str | os.PathLike = "docs/results.md",
    out: str | os.PathLike | None = None,
    beyond: float = BEYOND,
) -> dict:
    """Put ``metrics`` beside ``against`` (see the module docstring).

    Returns:
        ``{"rows": [...], "lines": [text lines], "beyond": [detector metric, ...]}``.

    Raises:
        CompareError: a missing file, or no detector in common (names both lists).
    """
    started = time.time()
    ours = detector_values(contracts.load_metrics(metrics))
    against = Path(against)
    reference = _reference(against)
    rows = compare(ours, reference, beyond)
    if not rows:
        raise CompareError(
            f"{metrics} and {against} have no detector with mAP in common (this run: "
            f"{', '.join(ours) or 'none'}; the reference: {', '.join(reference) or 'none'})"
        )
    lines = format_rows(rows, "headline" if against.suffix == ".md" else "other run")
    if out is not None:
        write_json_artifact(
            out,
            {"against": str(against), "spread_doc": SPREAD_DOC, "beyond": beyond, "rows": rows},
            stage="compare",
            inputs=[str(metrics), str(against)],
            config={"against": str(against), "beyond": beyond},
            started=started,
        )
    return {"rows": rows, "lines": lines, "beyond": [r for r in rows if r["beyond"]]}
