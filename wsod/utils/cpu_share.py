"""Share the CPU cores between wsod stages that run at once (``make -j2 all``).

A stage that computes for long (proposals, training, detection) holds a *slot* while it runs: a
file named after its process id in the folder ``$WSOD_JOBS_DIR`` (the Makefile exports one per
user). PyTorch stages count the live slots and use ``cores // live`` intra-op threads
(:class:`wsod.models.cpu_share_hook.WSODCPUShareHook`), back to PyTorch's default once they run
alone. Why: two PyTorch processes with as many OpenMP threads as cores spin-wait for each other's
cores and run far slower than one alone, while one thread each gives more iterations in all than
one process alone (``benchmarks/cpu_share.py``; docs/experiments/2026-12-04-two-stages-at-once.md).

With ``WSOD_JOBS_DIR`` unset nothing is registered and thread counts stay PyTorch's default.

The cores are the machine's, so the Makefile's folder is one per machine (``/tmp/wsod-jobs``,
not under ``$TMPDIR``, which differs between shells, batch jobs and users): a second ``make``
on a machine already running one shares the cores with it (1 thread each on 2 cores) instead of
running both at full width. The folder is created writable for everyone with the sticky bit, as
``/tmp`` itself, so runs of several users share it; a folder this process cannot write to turns
sharing off for it (with a warning) instead of failing the stage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "WSOD_JOBS_DIR"
"""Environment variable naming the folder of the slots; unset or empty: no sharing."""


def jobs_dir(directory: str | os.PathLike | None = None) -> Path | None:
    """``directory`` when given, else the slot folder from ``$WSOD_JOBS_DIR``; None when
    sharing is off."""
    if directory is not None:
        return Path(directory)
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextmanager
def slot(directory: str | os.PathLike | None = None) -> Iterator[Path | None]:
    """Hold a slot in ``directory`` (default :func:`jobs_dir`) for this process while inside.

    Yields the slot file, or None when sharing is off. A process killed before it leaves the
    block leaves its file behind; :func:`live_jobs` ignores and removes it.
    """
    folder = jobs_dir(directory)
    path = None if folder is None else _register(folder)
    try:
        yield path
    finally:
        if path is not None:
            path.unlink(missing_ok=True)


def _register(folder: Path) -> Path | None:
    """Write this process's slot file in ``folder`` (created shared, mode 1777); None, with a
    warning, when the folder cannot be written to."""
    import warnings

    try:
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o1777)  # every user's runs share the machine's cores
        path = folder / str(os.getpid())
        path.write_text(f"{os.getpid()}\n")
    except OSError as e:
        warnings.warn(
            f"CPU sharing off for this process: cannot write its slot in {folder} ({e}); "
            f"set {ENV} to a folder you can write to (the same for every run on this machine)",
            stacklevel=3,
        )
        return None
    return path


def live_jobs(directory: str | os.PathLike | None = None) -> int:
    """Number of slots in ``directory`` (default :func:`jobs_dir`) held by live processes;
    files of processes that exited are removed. 0 when sharing is off or the folder is absent."""
    folder = jobs_dir(directory)
    if folder is None or not folder.is_dir():
        return 0
    live = 0
    for path in folder.iterdir():
        if not path.name.isdigit():
            continue
        if _alive(int(path.name)):
            live += 1
        else:
            try:
                path.unlink(missing_ok=True)
            except PermissionError:  # another user's stale slot in the shared folder
                pass
    return live


def fair_threads(
    directory: str | os.PathLike | None = None, *, total: int | None = None, default: int
) -> int:
    """Intra-op threads for one job: ``default`` when at most one job is live, else
    ``max(1, total // live)`` (``total``: :func:`cores`), never above ``default``."""
    live = live_jobs(directory)
    if live <= 1:
        return default
    return max(1, min(default, (total or cores()) // live))


@contextmanager
def shared_threads(directory: str | os.PathLike | None = None) -> Iterator[int | None]:
    """Hold a slot and run PyTorch with :func:`fair_threads` intra-op threads inside the block
    (set once, on entry), back to the previous count after it: for a stage that runs PyTorch
    outside a Runner (``wsod predict``), so it shares the cores with the runs it meets. Yields
    the thread count, or None when sharing is off."""
    import torch

    with slot(directory) as path:
        if path is None:
            yield None
            return
        before = torch.get_num_threads()
        want = fair_threads(directory, default=before)
        torch.set_num_threads(want)
        try:
            yield want
        finally:
            torch.set_num_threads(before)
