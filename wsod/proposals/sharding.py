"""``--shard i/n``: split a list of images for cluster array jobs.

Shard ``i`` of ``n`` (0-based ``i``, ``0 <= i < n``) takes every n-th image starting at ``i``
(``images[i::n]``): shards are balanced even when image sizes drift through the list, and
``i`` can be an array job's task id (``SLURM_ARRAY_TASK_ID`` with ``--array=0-(n-1)``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def parse_shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``'1/4'`` -> ``(1, 4)``; None stays None. Raises ValueError naming the fix."""
    if shard is None:
        return None
    if isinstance(shard, tuple):
        i, n = shard
    else:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(shard))
        if not m:
            raise ValueError(f"--shard {shard!r}: expected 'i/n' with 0 <= i < n, e.g. 0/4")
        i, n = int(m.group(1)), int(m.group(2))
    if not 0 <= i < n:
        raise ValueError(f"--shard {i}/{n}: need 0 <= i < n (shards are numbered from 0)")
    return i, n


def take_shard(items: Sequence[T], shard: tuple[int, int] | None) -> list[T]:
    """The items of shard ``(i, n)``: ``items[i::n]``; all items when ``shard`` is None."""
    if shard is None:
        return list(items)
    i, n = shard
    return list(items[i::n])
