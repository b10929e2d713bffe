"""Run-time leakage guard: records which wsod command opens ground truth (tests only).

This folder goes first on ``PYTHONPATH`` of the processes a test starts, with ``WSOD_AUDIT_LOG``
naming a log file (:mod:`leak_audit` sets both). Python imports ``sitecustomize`` at start-up,
so every Python process of the run (each ``python -m wsod <stage>`` that ``make all`` starts,
and the processes those start) installs an audit hook (``sys.addaudithook``, PEP 578) that
appends one JSON line per ground-truth access to the log: ``{"command", "argv", "event",
"path", "write", "pid"}``. Ground truth is an eval-only ``*_gt.json`` (its temporary and
``.meta.json`` twins included) or anything under a VOC ``Annotations`` folder; the events are
``open`` (``open``, ``os.open``, ``io.open``, ``np.load`` and every reader built on them) and
the folder listings ``os.listdir`` / ``os.scandir`` (``glob``).

``command`` is the wsod subcommand (``weak`` for ``python -m wsod weak``), the module of
another ``python -m`` (``wsod.pipeline``), in a child process (a proposals worker) the command
of the process that started it (``WSOD_AUDIT_COMMAND``, inherited), else the file name of the
script a ``python SCRIPT.py`` runs (``oracle_labels.py``) or the interpreter's.
"""

from __future__ import annotations

import json
import os
import re
import sys

_LOG = os.environ.get("WSOD_AUDIT_LOG")
_GROUND_TRUTH = re.compile(r"_gt\.json|(^|[/\\])Annotations([/\\]|$)")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _command(argv: list[str]) -> str:
    if "-m" in argv[:-1]:
        module = argv[argv.index("-m") + 1]
        rest = argv[argv.index("-m") + 2 :]
        if module == "wsod" and rest and not rest[0].startswith("-"):
            return rest[0]
        return module
    inherited = os.environ.get("WSOD_AUDIT_COMMAND")
    if inherited:
        return inherited
    rest = argv[1:]
    script = next((a for a in rest if not a.startswith("-")), "")
    if script.endswith(".py") and "-c" not in rest[: rest.index(script)]:
        return os.path.basename(script)  # python [options] SCRIPT.py: the script's file name
    return os.path.basename(argv[0] if argv else "")


def _install(log: str) -> None:
    argv = [str(a) for a in getattr(sys, "orig_argv", sys.argv)]
    command = _command(argv)
    os.environ["WSOD_AUDIT_COMMAND"] = command  # children of this process report under it

    def hook(event: str, args: tuple) -> None:
        if event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        path = args[0]
        if path is None or isinstance(path, int):
            return  # an open file descriptor: its path was audited when it was opened
        path = os.fsdecode(path)
        if not _GROUND_TRUTH.search(path):
            return
        flags = args[2] if event == "open" and len(args) > 2 and isinstance(args[2], int) else 0
        row = {
            "command": command,
            "argv": argv,
            "event": event,
            "path": os.path.abspath(path),
            "write": bool(flags & _WRITE_FLAGS),
            "pid": os.getpid(),
        }
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(row) + "\n").encode())
        finally:
            os.close(fd)

    sys.addaudithook(hook)


if _LOG:
    _install(_LOG)
