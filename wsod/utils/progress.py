"""Progress bars that stay readable in logs.

:func:`progress` is a drop-in for ``tqdm(...)``: on a terminal it *is* a tqdm bar; written to
anything else (make's output piped to a file, CI logs) a tqdm bar would emit one
carriage-return update per refresh, thousands on one line, so it prints instead one plain line
every ``every`` percent (default 10 %) and a last line on close, formatted by tqdm's own
``format_meter`` (count, percentage, elapsed, rate, ETA). With no known total it prints a line
at most every ``interval`` seconds.

Usage (the same arguments as tqdm's)::

    for path in progress(paths, desc="predict", unit="img"):
        ...
    with progress(total=n_bytes, unit="B", unit_scale=True, desc=name) as bar:
        bar.update(len(block))
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

__all__ = ["LineProgress", "is_terminal", "progress"]


def is_terminal(stream: IO | None) -> bool:
    """Whether ``stream`` is an interactive terminal (False for files, pipes, StringIO)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress(
    iterable: Iterable | None = None,
    total: float | None = None,
    desc: str | None = None,
    unit: str = "it",
    disable: bool = False,
    *,
    file: IO | None = None,
    every: float = 10.0,
    interval: float = 30.0,
    **tqdm_kwargs: Any,
):
    """A tqdm bar on a terminal, a :class:`LineProgress` (a line every ``every`` %) elsewhere.

    Args:
        iterable: what to iterate over (optional, as in tqdm).
        total: the expected number of items (default ``len(iterable)`` when it has one).
        desc: the bar's label.
        unit: what one item is (``img``, ``B``...).
        disable: no output at all.
        file: the stream written to (default ``sys.stderr``, as tqdm).
        every: not a terminal: print a line each time this many percent more are done.
        interval: not a terminal and no total: print a line at most every this many seconds.
        **tqdm_kwargs: further tqdm arguments (``unit_scale``, ``initial``,
            ``dynamic_ncols``...); :class:`LineProgress` honours ``initial`` and
            ``unit_scale``, and ignores the display-only ones.

    Returns:
        An object with tqdm's interface: iterate over it, ``update(n)``, ``close()``, use it as
        a context manager; ``n`` and ``total`` are the counts.
    """
    stream = sys.stderr if file is None else file
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    if disable or is_terminal(stream):
        from tqdm import tqdm

        return tqdm(
            iterable,
            total=total,
            desc=desc,
            unit=unit,
            disable=disable,
            file=stream,
            **tqdm_kwargs,
        )
    return LineProgress(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        file=stream,
        every=every,
        interval=interval,
        initial=tqdm_kwargs.get("initial", 0),
        unit_scale=tqdm_kwargs.get("unit_scale", False),
    )


class LineProgress:
    """tqdm's interface, one plain line per ``every`` percent (for logs; see :func:`progress`)."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        *,
        total: float | None = None,
        desc: str | None = None,
        unit: str = "it",
        file: IO,
        every: float = 10.0,
        interval: float = 30.0,
        initial: float = 0,
        unit_scale: bool | float = False,
    ):
        if every <= 0:
            raise ValueError(f"every={every}: want a positive percentage")
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.unit = unit
        self.file = file
        self.every = float(every)
        self.interval = float(interval)
        self.unit_scale = unit_scale
        self.n = initial
        self.start_t = time.time()
        self._last_step = self._step()  # the multiple of ``every`` last printed
        self._last_t = self.start_t
        self._closed = False
        self.lines = 0  # lines written so far

    # ---- tqdm's interface
    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self) -> int:
        return int(self.total) if self.total is not None else len(self.iterable)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        """Count ``n`` more done; print a line when a new ``every`` % step (or, with no
        total, ``interval`` seconds) has been reached since the last line."""
        self.n += n
        step = self._step()
        if self.total:
            if step > self._last_step:
                self._last_step = step
                self._emit()
        elif time.time() - self._last_t >= self.interval:
            self._emit()

    def close(self) -> None:
        """Print the final line (unless the last line already said 100 %)."""
        if self._closed:
            return
        self._closed = True
        done = self.total and self.n >= self.total and self._last_step * self.every >= 100
        if not done:
            self._emit()

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Accepted for compatibility; not shown in the log lines."""

    def refresh(self) -> None:
        """Accepted for compatibility: lines are printed on ``update`` and ``close``."""

    # ---- helpers
    def _step(self) -> int:
        if not self.total:
            return 0
        return int(100.0 * min(self.n, self.total) / self.total // self.every)

    def _emit(self) -> None:
        from tqdm import tqdm

        now = time.time()
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            fmt = (
                head + "{percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
            )
        else:
            fmt = head + "{n_fmt} [{elapsed}, {rate_fmt}]"
        line = tqdm.format_meter(
            self.n,
            self.total,
            now - self.start_t,
            unit=self.unit,
            unit_scale=self.unit_scale,
            bar_format=fmt,
        )
        self.file.write(line + "\n")
        self.file.flush()
        self._last_t = now
        self.lines += 1
