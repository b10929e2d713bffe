"""Run-time leakage guard for tests that start wsod commands (the end-to-end ``make all`` runs).

:func:`audited_env` returns an environment whose Python processes record every ground-truth
access (``tests/audit/sitecustomize.py``); :func:`read_log` reads what they recorded and
:func:`offences` says which command opened ground truth without being allowed to:

- ``data`` writes the eval-only ``*_gt.json`` from the VOC ``Annotations``;
- ``evaluate`` and ``report`` score detections against it (after training, feeding nothing
  back);
- ``strong --fully-supervised-gt`` is the labelled fully supervised reference (an upper bound,
  trained on real boxes on purpose) and ``denoise --quality-gt`` the labelled diagnostic;
- ``oracle_labels.py`` (``python benchmarks/oracle_labels.py``) is the labelled ORACLE benchmark
  that builds train labels from the training ground truth (issue 53); no make target of a
  pipeline runs it (``tests/stages/test_leakage.py``).

Every other command (``proposals``, ``weak``, ``denoise``, ``strong``, ``rescore``,
``predict``, ``wsod.pipeline``, ...) is a training-side or inference command: one ground-truth
access is an offence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

AUDIT_DIR = Path(__file__).resolve().parent / "audit"
# command -> the flag its command line must carry to open ground truth (None: always allowed)
ALLOWED: dict[str, str | None] = {
    "data": None,
    "evaluate": None,
    "report": None,
    "strong": "--fully-supervised-gt",
    "denoise": "--quality-gt",
    "oracle_labels.py": None,
}


def audited_env(env: Mapping[str, str], log: Path) -> dict[str, str]:
    """``env`` plus the audit hook: processes started with it append to ``log`` (JSON lines)."""
    path = [str(AUDIT_DIR), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(path), "WSOD_AUDIT_LOG": str(log)}


def read_log(log: Path) -> list[dict]:
    """The recorded ground-truth accesses (none when no process opened ground truth)."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def offences(rows: list[dict]) -> list[str]:
    """One line per access by a command that may not open ground truth."""
    out = []
    for row in rows:
        command = row["command"]
        if command in ALLOWED and (ALLOWED[command] is None or ALLOWED[command] in row["argv"]):
            continue
        what = "wrote" if row["write"] else "read"
        out.append(f"{command!r} {what} {row['path']} ({row['event']}; {' '.join(row['argv'])})")
    return out
