"""Known-harmless library messages kept off the terminal; the full mmengine log stays in the
work dir (``<work_dir>/<timestamp>/<timestamp>.log``).

A run's terminal output should show what matters (each stage's progress and summary lines, the
"Skipped" lines, the per-class counts). Before this filter a tags-only run printed ~2,900 lines,
most of them the messages below, repeated by every training and detection Runner. Each one is
named here with why it is harmless; nothing else is hidden.

- Python warning ``pkg_resources is deprecated as an API`` (``UserWarning``, setuptools >= 80):
  mmengine 0.10.7 imports ``pkg_resources`` in ``mmengine/utils/package_utils.py`` to read
  installed versions. Nothing for a user to do; the pinned stack works as is.
- mmengine's ``<param> is skipped since its requires_grad=False`` (one WARNING per frozen
  parameter, 99 per CAM black box run): the optimizer constructor leaves out the parameters the
  config freezes (the trunk's first stages) on purpose; and its ``paramwise_options -- <param>:
  lr=...`` (three INFO lines per parameter with its own lr or decay, ~200 per CAM run): the
  config's ``paramwise_cfg`` applied as written.
- mmengine's ``System environment`` block, ``Config:`` dump and ``Hooks will be executed in
  the following order`` list (INFO, ~350 lines per Runner): the resolved config is saved beside
  the run (``weak_config.py``, ``strong_config.py``) and all three stay in the log file.
- mmengine's ``Distributed training is not used, all SyncBatchNorm (SyncBN) layers ... reverted to
  BatchNormXd`` (INFO, once per Runner): a one-process run; the configs name no SyncBN layer.
- mmengine's ``"FileClient" will be deprecated`` and ``"HardDiskBackend" is the alias of
  "LocalBackend"`` (WARNING): its own checkpoint code uses the old names internally.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator

HARMLESS_WARNINGS = ((UserWarning, r"pkg_resources is deprecated as an API"),)
"""``(category, message regex)`` of Python warnings ignored (see the module docstring)."""

HARMLESS_LOG_LINES = (
    "is skipped since its requires_grad=False",
    " - INFO - paramwise_options -- ",
    "\nSystem environment:",
    " - INFO - Config:\n",
    " - INFO - Hooks will be executed in the following order:",
    "Distributed training is not used, all SyncBatchNorm (SyncBN) layers",
    '"FileClient" will be deprecated in future',
    '"HardDiskBackend" is the alias of "LocalBackend"',
)
"""Text of mmengine console records kept off the terminal (see the module docstring)."""


def filter_warnings() -> None:
    """Ignore :data:`HARMLESS_WARNINGS` (call before mmengine is imported)."""
    for category, message in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def harmless(text: str) -> bool:
    """Whether a console record is one of :data:`HARMLESS_LOG_LINES`."""
    return any(s in text for s in HARMLESS_LOG_LINES)


class ConsoleStream:
    """A text stream that passes every write on to ``stream`` except harmless log records (a
    logging ``StreamHandler`` writes one record per call)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if harmless(text):
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextlib.contextmanager
def quiet_console() -> Iterator[None]:
    """Build mmengine objects (a ``Runner``) inside this block: the console handler of the
    logger they create keeps writing through :class:`ConsoleStream` afterwards, so harmless
    records never reach the terminal while the log file keeps them all."""
    with contextlib.redirect_stdout(ConsoleStream(sys.stdout)):
        yield
