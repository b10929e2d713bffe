"""Reading and writing proposal files, and the per-image resume cache.

Files written by the proposals stage (all atomic, each with ``<file>.meta.json``):

* ``<name>.pkl`` -- mmdet's proposal contract, what ``proposal_file`` + ``LoadProposals`` read:
  ``{file_name: {"bboxes": float32 (N,4) x1y1x2y2, "scores": float32 (N,)}}``, keyed by the
  image path relative to the data root (``JPEGImages/000005.jpg``), boxes sorted by score.
* ``<name>.npz`` -- the same content without pickle: ``keys`` (K,) str, ``offsets`` (K+1,)
  int64, ``bboxes`` (sum N,4) float32, ``scores`` (sum N,) float32; image ``k`` owns rows
  ``offsets[k]:offsets[k+1]``; ``pkl_sha256`` () str, the sha256 of the ``.pkl`` written with
  it. :func:`load_proposals` prefers it to the pickle, but only while it is the twin of the
  ``.pkl`` beside it: a ``.pkl`` replaced after the ``.npz`` was written (another hash) makes
  the twin stale, and reading refuses it (delete the ``.npz`` or rerun ``wsod proposals``).
  Twins written before the hash was recorded are checked by re-pickling their content.

Write order (:func:`save_proposals`): the old ``.pkl`` is removed, then the ``.npz`` and then
the ``.pkl`` are written (each with its sidecar, :func:`wsod.utils.io.write_artifact`), so a
present ``.pkl`` (the make target) implies its up-to-date twin, whatever instant a kill hits.

Cache: ``<cache_dir>/<config hash>/`` holds one ``.npz`` per image (``bboxes``, ``scores``),
written atomically by the worker that computed it, plus ``params.json``. A rerun with the same
parameters skips every image whose cache file exists, so a killed run resumes where it stopped;
other parameters get their own sub-folder. The cache does not notice edited image files: delete
the cache folder after changing images.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from wsod.contracts import validate_proposals
from wsod.utils.io import (
    PickleNotAllowedError,
    atomic_path,
    file_sha256,
    read_pickle,
    write_artifact,
    write_json,
)


class ProposalFileError(ValueError):
    """A proposal file cannot be read; the message names the file and the fix."""


def npz_twin(path: str | os.PathLike) -> Path:
    """``x/train.pkl`` -> ``x/train.npz``."""
    p = Path(path)
    return p.with_suffix(".npz") if p.suffix == ".pkl" else Path(f"{p}.npz")


def pickle_bytes(props: Mapping[str, Mapping[str, np.ndarray]]) -> bytes:
    """The ``.pkl`` file's bytes for a clean proposal dict (protocol 4, deterministic)."""
    import pickle

    return pickle.dumps(dict(props), protocol=4)


def pack(props: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Proposal dict -> the flat arrays of the ``.npz`` twin (keys, offsets, bboxes, scores)."""
    keys = list(props)
    boxes = [np.asarray(props[k]["bboxes"], np.float32).reshape(-1, 4) for k in keys]
    scores = [
        np.asarray(props[k].get("scores", np.zeros(len(b))), np.float32).reshape(-1)
        for k, b in zip(keys, boxes, strict=True)
    ]
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in boxes])
    return {
        "keys": np.array(keys, dtype=str) if keys else np.zeros(0, dtype="<U1"),
        "offsets": offsets,
        "bboxes": np.concatenate(boxes) if boxes else np.zeros((0, 4), np.float32),
        "scores": np.concatenate(scores) if scores else np.zeros(0, np.float32),
    }


def unpack(arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Inverse of :func:`pack`."""
    keys, off = arrays["keys"], arrays["offsets"]
    b, s = arrays["bboxes"], arrays["scores"]
    return {
        str(k): {
            "bboxes": b[off[i] : off[i + 1]].astype(np.float32),
            "scores": s[off[i] : off[i + 1]].astype(np.float32),
        }
        for i, k in enumerate(keys)
    }


def _read_npz_arrays(path: str | os.PathLike) -> tuple[dict, str | None]:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in ("keys", "offsets", "bboxes", "scores")}
            pkl_hash = str(z["pkl_sha256"]) if "pkl_sha256" in z.files else None
    except (KeyError, ValueError, OSError) as e:
        raise ProposalFileError(f"{path}: not a proposal .npz ({e}); rerun `wsod proposals`") from e
    return arrays, pkl_hash


def read_npz(path: str | os.PathLike) -> dict[str, dict[str, np.ndarray]]:
    """Read a ``.npz`` twin (no pickle involved)."""
    return unpack(_read_npz_arrays(path)[0])


def read_twin(twin: Path, pkl: Path) -> dict[str, dict[str, np.ndarray]]:
    """Read ``twin`` in place of ``pkl``, refusing it if it is not ``pkl``'s twin.

    Raises:
        ProposalFileError: ``pkl`` changed after ``twin`` was written (names both and the fix).
    """
    arrays, recorded = _read_npz_arrays(twin)
    props = unpack(arrays)
    if not pkl.is_file():
        return props
    actual = file_sha256(pkl)
    expected = recorded or hashlib.sha256(pickle_bytes(props)).hexdigest()
    if actual != expected:
        raise ProposalFileError(
            f"{twin}: stale twin of {pkl}: the .pkl changed after this .npz was written, so "
            f"they no longer hold the same proposals. Delete {twin} to read the .pkl itself "
            "(with --allow-pickle if you trust it), or rerun `wsod proposals` to rewrite both"
        )
    return props


def load_proposals(
    path: str | os.PathLike,
    allow_pickle: bool = False,
) -> dict[str, dict[str, np.ndarray]]:
    """Load proposals in the mmdet contract, preferring the safe ``.npz`` twin.

    Args:
        path: a ``.pkl`` (its ``.npz`` twin is read when present and not stale) or a ``.npz``.
        allow_pickle: needed only when a ``.pkl`` has no twin (unpickling runs code).

    Returns:
        ``{file_name: {"bboxes": float32 (N,4) x1y1x2y2, "scores": float32 (N,)}}``.

    Raises:
        ProposalFileError: missing file, a pickle without ``allow_pickle``, or a stale twin.
    """
    path = Path(path)
    if path.suffix == ".npz":
        if not path.is_file():
            raise ProposalFileError(f"{path}: no such proposal file; run `wsod proposals`")
        return validate_proposals(read_npz(path), where=str(path))
    twin = npz_twin(path)
    if twin.is_file():
        return validate_proposals(read_twin(twin, path), where=str(twin))
    if not path.is_file():
        raise ProposalFileError(f"{path}: no such proposal file; run `wsod proposals`")
    try:
        obj = read_pickle(path, allow_pickle, hint="or convert it to .npz")
    except PickleNotAllowedError as e:
        raise ProposalFileError(str(e)) from None
    return validate_proposals(obj, where=str(path))


def require_proposal_file(
    proposals: str | os.PathLike, split_path: str | os.PathLike, allow_pickle: bool = False
) -> None:
    """Refuse, before a training stage writes anything, a proposal file that is missing (nor its
    ``.npz`` twin) or a ``.pkl`` without its safe ``.npz`` twin and without the user's
    ``--allow-pickle`` (the dataset would refuse it only once the runner builds it, after the
    work dir was made). Shared by the weak and the strong stage.

    Raises:
        ProposalFileError: the message names the file and the fix.
    """
    path, has_twin = Path(proposals), npz_twin(proposals).is_file()
    if not (path.is_file() or has_twin):
        raise ProposalFileError(
            f"{proposals}: no such proposal file; run `wsod proposals` on {split_path}"
        )
    if allow_pickle or path.suffix != ".pkl" or has_twin:
        return
    raise ProposalFileError(
        f"{proposals}: a pickle without its .npz twin; unpickling runs code in the file: "
        "give --allow-pickle for a trusted file, or rerun `wsod proposals` (it writes the twin)"
    )


def proposal_file_read(proposals: str | os.PathLike) -> Path:
    """The file :func:`load_proposals` reads for ``proposals``: the ``.npz`` twin when present,
    else the file itself (what a training run's fingerprint hashes)."""
    twin = npz_twin(proposals)
    return twin if twin.is_file() else Path(proposals)


def save_proposals(
    path: str | os.PathLike, props: Mapping[str, Mapping[str, np.ndarray]], **meta
) -> Path:
    """Write ``path`` (.pkl, mmdet contract) and its ``.npz`` twin, atomically, with metas.

    The old ``.pkl`` goes first and the ``.npz`` (holding the new ``.pkl``'s hash) is written
    before the new ``.pkl``, so a present ``.pkl`` (the make target) implies its twin.
    ``meta`` goes to :func:`wsod.utils.io.write_meta` (stage, config, inputs, seed, started,
    extra).
    """
    path = Path(path)
    if path.suffix != ".pkl":
        raise ProposalFileError(
            f"{path}: the proposal output must end in .pkl (mmdet's "
            "proposal_file); its .npz twin is written next to it"
        )
    clean = {
        k: {
            "bboxes": np.asarray(v["bboxes"], np.float32).reshape(-1, 4),
            "scores": np.asarray(v["scores"], np.float32).reshape(-1),
        }
        for k, v in props.items()
    }
    validate_proposals(clean, where=str(path))
    data = pickle_bytes(clean)
    arrays = {**pack(clean), "pkl_sha256": np.array(hashlib.sha256(data).hexdigest())}

    def _npz(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    path.unlink(missing_ok=True)  # no old .pkl beside the new twin, even for a moment
    write_artifact(npz_twin(path), _npz, **meta)
    return write_artifact(path, lambda tmp: tmp.write_bytes(data), **meta)


# --------------------------------------------------------------------------- cache
def config_hash(params: Mapping) -> str:
    """A short stable hash of the parameters that change the boxes."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def image_digest(path: str | os.PathLike) -> str:
    """The first 16 hex digits of an image file's SHA-256: the cache keys results by content."""
    return file_sha256(path)[:16]


class ProposalCache:
    """Per-image ``.npz`` results under ``<root>/<config hash>/``, one file per image name *and*
    content (``<name>.<image digest>.npz``): a replaced image is computed again, and one cache
    can serve every run on the same images (the Makefile's shared cache, ``PROPOSAL_CACHE``)
    without mixing up two datasets whose files have the same names. The name stays in the key
    because selective search seeds its ranking from it."""

    def __init__(self, root: str | os.PathLike, params: Mapping):
        self.dir = Path(root) / config_hash(params)
        self.params = dict(params)

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        pfile = self.dir / "params.json"
        if not pfile.is_file():
            write_json(pfile, self.params, indent=2)

    def file(self, key: str, digest: str) -> Path:
        safe = key.replace(os.sep, "__").replace("/", "__")
        return self.dir / f"{safe}.{digest}.npz"

    def has(self, key: str, digest: str) -> bool:
        return self.file(key, digest).is_file()

    def put(self, key: str, digest: str, bboxes: np.ndarray, scores: np.ndarray) -> None:
        with atomic_path(self.file(key, digest)) as tmp, open(tmp, "wb") as f:
            np.savez(
                f,
                bboxes=np.asarray(bboxes, np.float32).reshape(-1, 4),
                scores=np.asarray(scores, np.float32).reshape(-1),
            )

    def get(self, key: str, digest: str) -> dict[str, np.ndarray]:
        f = self.file(key, digest)
        try:
            with np.load(f, allow_pickle=False) as z:
                return {
                    "bboxes": z["bboxes"].astype(np.float32),
                    "scores": z["scores"].astype(np.float32),
                }
        except (KeyError, ValueError, OSError) as e:
            raise ProposalFileError(f"{f}: unreadable cache file ({e}); delete it and rerun") from e
