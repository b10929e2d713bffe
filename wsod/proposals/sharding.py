"""``--shard i/n``: split a list of images for cluster array jobs.

Shard ``i`` of ``n`` (0-based ``i``, ``0 <= i < n``) takes every n-th image starting at ``i``
(``images[i::n]``): shards are balanced even when image sizes drift through the list, and
``i`` can be an array job's task id (``SLURM_ARRAY_TASK_ID`` with ``--array=0-(n-1)``).

A shard's output records ``{"index", "count", ...}`` under ``shard`` in its ``.meta.json``
(:func:`shard_info`); :func:`merge_shards` combines the shard files back into one, checking
that together they cover the split exactly once.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from wsod.proposals.store import load_proposals

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


def shard_info(shard: tuple[int, int] | None, taken: int, total: int) -> dict | None:
    """What a shard output records in its meta (None for a whole split)."""
    if shard is None:
        return None
    return {
        "index": shard[0],
        "count": shard[1],
        "images": taken,
        "split_images": total,
        "rule": "images[i::n]",
    }


def _read_meta(path: Path) -> dict:
    m = Path(f"{path}.meta.json")
    if not m.is_file():
        return {}
    with open(m) as f:
        return json.load(f)


def _check_coverage(merged: dict, file_names: Sequence[str], seen_idx: set) -> None:
    missing = [k for k in file_names if k not in merged]
    if missing:
        raise ValueError(
            f"merge: {len(missing)} images of the split are in no shard file (e.g. "
            f"{missing[:3]}); shard indices present: {sorted(seen_idx)}. Add the missing shards"
        )
    wanted = set(file_names)
    extra = [k for k in merged if k not in wanted]
    if extra:
        raise ValueError(
            f"merge: {len(extra)} images are not in the split (e.g. {extra[:3]}); "
            "use the split the shards were made from"
        )


def merge_shards(
    files: Sequence[str | os.PathLike], file_names: Sequence[str], allow_pickle: bool = False
) -> tuple[dict, list[dict]]:
    """Combine shard outputs into one proposal dict in ``file_names`` order.

    Every image of ``file_names`` must be in exactly one shard (an image in two shards must have
    identical boxes); shard markers in the metas must agree on ``n`` and not repeat an ``i``.

    Returns:
        ``(proposals, shard_infos)``.
    """
    merged: dict[str, dict[str, np.ndarray]] = {}
    infos, seen_idx, counts = [], set(), set()
    for f in files:
        props = load_proposals(f, allow_pickle=allow_pickle)
        shard = _read_meta(Path(f)).get("shard")
        infos.append({"file": str(f), "images": len(props), "shard": shard})
        if shard:
            counts.add(shard["count"])
            if shard["index"] in seen_idx:
                raise ValueError(f"{f}: shard {shard['index']}/{shard['count']} given twice")
            seen_idx.add(shard["index"])
        for k, v in props.items():
            if k in merged and not (np.array_equal(merged[k]["bboxes"], v["bboxes"])):
                raise ValueError(
                    f"{f}: image {k} is also in another shard with other boxes; "
                    "were the shards made with the same settings?"
                )
            merged[k] = v
    if len(counts) > 1:
        raise ValueError(f"shards come from different splits into n parts: {sorted(counts)}")
    _check_coverage(merged, file_names, seen_idx)
    return {k: merged[k] for k in file_names}, infos
