"""Commands that tests start, bounded in time: a hung stage fails its test instead of hanging CI.

``make`` starts the stages as its children and a Python stage may start workers: on a timeout
the whole process group goes, not only the command the test started (``subprocess.run``'s own
``timeout`` kills that one process and leaves its children running).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence


def run_bounded(
    cmd: Sequence[str], *, timeout: float, **kwargs
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` in its own process
    group, the group killed (SIGKILL) after ``timeout`` seconds and the test failed, with the
    output's tail."""
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(
            f"{' '.join(cmd)} still ran after {timeout:.0f} s; its process group was killed:\n"
            f"{out[-3000:]}\n{err[-3000:]}"
        ) from None
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group ``proc`` leads (started with ``start_new_session``)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass  # already gone
