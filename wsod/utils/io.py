"""Atomic artifact writes with a provenance sidecar, and friendly readers.

Every artifact is written to a temporary file in the same folder and renamed into place, so an
interrupted stage never leaves a partial file that `make` would take as done. Beside it goes
``<file>.meta.json``: resolved config, command line, git commit, input file hashes, package
versions, seed, wall time and the CPU it was measured on (``cpu``: :mod:`wsod.utils.cpu`), plus
what the process noted for its provenance (:func:`note_in_provenance`, e.g. the precision a
training stage chose).

Invariant (:func:`write_artifact`): **an artifact never stands beside a missing or stale
sidecar**, whatever instant the process is killed at (``kill -9`` included). Both files are
first written completely under temporary names; then, in this order,

1. the previous artifact is removed (its old sidecar may stay: an orphan sidecar describes no
   file, and `make` only looks at the artifact);
2. the new sidecar is renamed into place;
3. the new artifact is renamed into place.

A kill before 1 leaves the previous artifact with its own sidecar; a kill after 1 and before 3
leaves no artifact (`make` reruns the stage); after 3 both are new. Readers therefore trust a
sidecar only when its artifact exists. Temporary files (``.<name>.*.tmp``) left by a kill are
ignored by every reader.

Pickle: :func:`read_pickle` is the one place that unpickles a file a user gives (unpickling runs
code): it refuses unless the caller passes ``allow_pickle=True`` (``--allow-pickle``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from wsod.utils.cpu import as_record as cpu_record

_PACKAGES = (
    "wsod",
    "torch",
    "torchvision",
    "mmcv",
    "mmdet",
    "mmengine",
    "numpy",
    "pycocotools",
    "opencv-contrib-python-headless",
)


class ArtifactError(RuntimeError):
    """A file could not be read; the message names it and says what to do."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, commit: bool = True):
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    With ``commit=False`` the caller renames it (see :func:`write_artifact`); a temporary file
    still there at the end (an error, or no rename) is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would make artifacts private to their writer
    try:
        yield Path(tmp)
        if commit:
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


class PickleNotAllowedError(ValueError):
    """A pickle file would have to be unpickled without the user's ``--allow-pickle``."""


def read_pickle(path: str | os.PathLike, allow_pickle: bool = False, hint: str = "") -> Any:
    """Unpickle ``path`` only if ``allow_pickle``; warn that it runs code.

    Args:
        path: the pickle file.
        allow_pickle: the user's opt-in (``--allow-pickle``).
        hint: what else the user can do (e.g. ``"or convert it to .npz"``), for the message.

    Raises:
        PickleNotAllowedError: ``allow_pickle`` is false (the message names the file and flag).
    """
    if not allow_pickle:
        raise PickleNotAllowedError(
            f"{path}: loading a pickle can run arbitrary code; pass --allow-pickle "
            f"(allow_pickle=True) if you trust this file{', ' + hint if hint else ''}"
        )
    warnings.warn(
        f"{path}: unpickling a file runs any code it contains; only do this for files you trust",
        stacklevel=2,
    )
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - the opt-in above


def meta_path(path: str | os.PathLike) -> Path:
    """``x/a.json`` -> ``x/a.json.meta.json`` (the sidecar)."""
    return Path(f"{path}.meta.json")


def write_json(path: str | os.PathLike, obj: Any, indent: int | None = None) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        json.dump(obj, f, indent=indent)


def write_pickle(path: str | os.PathLike, obj: Any) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=4)


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file; run the stage that makes it (see `make help`)")
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{path}: not valid json ({e}); delete it and rerun its stage") from e


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The hex SHA-256 of a file's bytes, read ``chunk`` bytes at a time: the one hash of a file
    in the package (artifact sidecars, run fingerprints, checkpoint and weight checks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def git_commit() -> str | None:
    here = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--", "wsod", "configs", "pipelines"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str | None]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return repr(obj)


def peak_rss_mb() -> dict[str, float]:
    """Peak resident memory so far (MB): this process and its largest finished child process
    (data-loader / proposal workers)."""
    import resource

    scale = 1 / 1024 if sys.platform != "darwin" else 1 / 1024**2  # KB on Linux, B on macOS
    return {
        "self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale, 1),
        "largest_child": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale, 1),
    }


_NOTED: dict[str, Any] = {}


def note_in_provenance(key: str, value: Any) -> None:
    """Record ``key: value`` in every sidecar this process writes from now on (a decision the
    stage took for the whole process, e.g. ``precision``; a later note of ``key`` replaces it,
    ``None`` forgets it)."""
    if value is None:
        _NOTED.pop(key, None)
    else:
        _NOTED[key] = _jsonable(value)


def build_meta(
    path: str | os.PathLike,
    *,
    stage: str,
    config: Mapping | None = None,
    inputs: Iterable[str | os.PathLike] = (),
    seed: int | None = None,
    started: float | None = None,
    extra: Mapping | None = None,
) -> dict:
    """The sidecar's content for artifact ``path`` (see the module docstring)."""
    inputs_info = {}
    for p in inputs:
        p = Path(p)
        inputs_info[str(p)] = file_sha256(p) if p.is_file() else None
    meta = {
        "artifact": str(path),
        "stage": stage,
        "command": sys.argv,
        "config": _jsonable(config or {}),
        "inputs_sha256": inputs_info,
        "seed": seed,
        "git_commit": git_commit(),
        "packages": package_versions(),
        "wall_time_s": None if started is None else round(time.time() - started, 3),
        "peak_rss_mb": peak_rss_mb(),
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_record(),
        **_NOTED,
    }
    if extra:
        meta.update(_jsonable(extra))
    return meta


def write_meta(path: str | os.PathLike, **meta: Any) -> Path:
    """Write ``<path>.meta.json`` describing how ``path`` was made. Returns the sidecar path.

    For a file written separately; :func:`write_artifact` writes both in the safe order.
    ``meta``: ``stage``, ``config``, ``inputs``, ``seed``, ``started``, ``extra`` (as
    :func:`build_meta`).
    """
    write_json(meta_path(path), build_meta(path, **meta), indent=2)
    return meta_path(path)


def write_artifact(path: str | os.PathLike, writer: Callable[[Path], None], **meta: Any) -> Path:
    """Write an artifact with ``writer(tmp_path)`` and its ``.meta.json``, both atomically.

    The commit order keeps the module's invariant: no artifact beside a missing or stale
    sidecar, at any kill point. ``meta`` as for :func:`write_meta`.
    """
    path = Path(path)
    side = meta_path(path)
    with atomic_path(path, commit=False) as tmp_art, atomic_path(side, commit=False) as tmp_meta:
        writer(tmp_art)
        with open(tmp_meta, "w") as f:
            json.dump(build_meta(path, **meta), f, indent=2)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # 1. the previous artifact goes first (its sidecar is now an orphan)
        os.replace(tmp_meta, side)  # 2. the new sidecar, still without an artifact
        os.replace(tmp_art, path)  # 3. the artifact, its sidecar already in place
    return path


def write_json_artifact(
    path: str | os.PathLike, obj: Any, indent: int | None = None, **meta: Any
) -> Path:
    def _w(tmp: Path) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=indent)

    return write_artifact(path, _w, **meta)


def named_paths(
    items: Mapping[str, Any] | Sequence[str] | str | None, names: Sequence[str] | None = None
) -> dict[str, Path]:
    """Normalise detector inputs to ``{name: path}``.

    Args:
        items: a mapping ``{name: path}``, or a list of ``"name=path"`` / bare paths (a bare path
            is named by ``names`` at the same position, else by its file stem).
        names: optional names for the list entries, in order.

    Returns:
        Ordered ``{name: Path}``.
    """
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return {str(k): Path(v) for k, v in items.items()}
    if isinstance(items, (str, os.PathLike)):
        items = [items]
    items = list(items)
    if names is not None and len(names) != len(items):
        raise ValueError(f"{len(names)} names for {len(items)} detection files; give one each")
    out: dict[str, Path] = {}
    for i, item in enumerate(items):
        item = os.fspath(item)
        if "=" in item and not Path(item).exists():
            name, path = item.split("=", 1)
        else:
            name, path = Path(item).stem, item
        if names is not None:
            name = names[i]
        if name in out:
            raise ValueError(
                f"detector name {name!r} given twice; use name=path to tell them apart"
            )
        out[name] = Path(path)
    return out
