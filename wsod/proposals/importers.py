"""Import precomputed proposals from the formats users already have.

Supported files (the format is chosen from the extension and the content):

* ``.mat`` -- Fast R-CNN / OICR ``selective_search_data`` files (``scipy.io.loadmat``):
  ``boxes`` a cell array with one (N,4) array per image, ``images`` the image names in the same
  order, optional ``boxes_scores``/``scores``. The classic files hold **1-based, inclusive
  ``y1, x1, y2, x2``** (layout ``'yx1'``, the default for .mat); files that already hold
  0-based ``x1, y1, x2, y2`` need ``layout='xy'``.
* ``.pkl`` PCL / wetectron style -- a dict with ``boxes`` (list of (N,4) ``x1, y1, x2, y2``),
  ``indexes`` or ``ids`` (image ids or names, same order) and optionally ``scores``.
* ``.pkl`` mmdet proposals -- the mmdet contract itself (``{file_name: {'bboxes', 'scores'}}``,
  or ``{file_name: (N,4|5) array}``), or a list aligned with the split's image order (mmdet 2.x
  ``proposal_file`` style: (N,4) or (N,5) arrays with the score last, or dicts).
* ``.npz`` -- our own safe twin (see :mod:`wsod.proposals.store`).

Pickle files can run arbitrary code when loaded: they are read only with ``allow_pickle=True``,
and then with a warning. Boxes in layout ``'xy'`` are taken as-is (continuous corners); the
one-pixel difference of 0-based *inclusive* corners (x2 = last pixel) is not corrected.

Entries are matched to split images by image id, file name, base name or stem (``000005``, and
``5`` for numeric stems). :func:`import_proposals` returns the matched proposals plus a report of
the file entries that matched no image and the images that have no entry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.proposals.postprocess import postprocess
from wsod.proposals.store import read_npz
from wsod.utils import io

LAYOUTS = ("yx1", "xy")


class ImportErrorWSOD(ValueError):
    """A proposal file could not be imported; the message names the file and the fix."""


def read_pickle(path: str | os.PathLike, allow_pickle: bool = False) -> Any:
    """Unpickle ``path`` through the one opt-in (:func:`wsod.utils.io.read_pickle`)."""
    try:
        return io.read_pickle(path, allow_pickle, hint="or convert it to .npz")
    except io.PickleNotAllowedError as e:
        raise ImportErrorWSOD(str(e)) from None


def convert_layout(boxes: np.ndarray, layout: str) -> np.ndarray:
    """(N,4) boxes in ``layout`` -> (N,4) float64 ``x1, y1, x2, y2`` 0-based continuous.

    ``'yx1'``: 1-based inclusive ``y1, x1, y2, x2`` (classic selective_search_data .mat):
    ``x1 = x1' - 1``, ``y1 = y1' - 1``, ``x2 = x2'``, ``y2 = y2'``. ``'xy'``: unchanged.
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if layout == "xy":
        return b.copy()
    if layout == "yx1":
        return np.stack([b[:, 1] - 1, b[:, 0] - 1, b[:, 3], b[:, 2]], axis=1)
    raise ImportErrorWSOD(f"unknown box layout {layout!r}; choose one of {LAYOUTS}")


def _name(x: Any) -> Any:
    """Unwrap scipy.io.loadmat cells / numpy scalars into a python str or int."""
    while isinstance(x, np.ndarray):
        if x.size != 1:
            if x.dtype.kind in "US":
                return "".join(map(str, x.reshape(-1)))
            raise ImportErrorWSOD(f"cannot read an image name from {x!r}")
        x = x.reshape(-1)[0]
    if isinstance(x, bytes):
        x = x.decode()
    if isinstance(x, np.generic):
        x = x.item()
    return x


def _cells(x: Any) -> list:
    """A MATLAB cell array (object ndarray, any orientation) -> python list."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        return list(x.reshape(-1))
    if isinstance(x, (list, tuple)):
        return list(x)
    raise ImportErrorWSOD(f"expected a cell array / list, got {type(x).__name__}")


class ImageMatcher:
    """Find a split image from an id, file name, base name or stem."""

    def __init__(self, images: Sequence[Mapping]):
        self.lookup: dict[Any, str] = {}
        ambiguous: set = set()
        for im in images:
            fn = str(im["file_name"])
            stem = Path(fn).stem
            keys = [im["id"], str(im["id"]), fn, Path(fn).name, stem, "/".join(Path(fn).parts[-2:])]
            if stem.isdigit():
                keys.append(int(stem))
            for k in dict.fromkeys(keys):
                if k in self.lookup and self.lookup[k] != fn:
                    ambiguous.add(k)
                self.lookup.setdefault(k, fn)
        for k in ambiguous:
            del self.lookup[k]

    def __call__(self, key: Any) -> str | None:
        key = _name(key)
        if key in self.lookup:
            return self.lookup[key]
        if isinstance(key, str):
            for cand in ("/".join(Path(key).parts[-2:]), Path(key).name, Path(key).stem):
                if cand in self.lookup:
                    return self.lookup[cand]
            if key.isdigit() and int(key) in self.lookup:
                return self.lookup[int(key)]
        return None


def _entries_mat(path: Path, layout: str | None) -> list[tuple[Any, np.ndarray, np.ndarray | None]]:
    import scipy.io

    try:
        mat = scipy.io.loadmat(path)
    except NotImplementedError as e:  # MATLAB v7.3 (HDF5)
        raise ImportErrorWSOD(
            f"{path}: MATLAB v7.3 files are not supported; re-save it with scipy or MATLAB -v7"
        ) from e
    if "boxes" not in mat or "images" not in mat:
        raise ImportErrorWSOD(
            f"{path}: a proposal .mat needs 'boxes' and 'images' variables, "
            f"found {sorted(k for k in mat if not k.startswith('__'))}"
        )
    boxes = _cells(mat["boxes"])
    names = (
        [_name(n) for n in _cells(mat["images"])]
        if mat["images"].dtype == object
        else [_name(n) for n in np.asarray(mat["images"]).reshape(-1)]
    )
    score_key = next((k for k in ("boxes_scores", "scores") if k in mat), None)
    scores = _cells(mat[score_key]) if score_key else [None] * len(boxes)
    if len(names) != len(boxes) or len(scores) != len(boxes):
        raise ImportErrorWSOD(
            f"{path}: {len(boxes)} box arrays but {len(names)} image names "
            f"and {len(scores)} score arrays"
        )
    lay = layout or "yx1"
    return [
        (n, convert_layout(b, lay), None if s is None else np.asarray(s, np.float64).ravel())
        for n, b, s in zip(names, boxes, scores, strict=True)
    ]


def _split_arr(arr: Any) -> tuple[np.ndarray, np.ndarray | None]:
    if isinstance(arr, Mapping):
        b = np.asarray(arr["bboxes"], np.float64).reshape(-1, 4)
        s = arr.get("scores")
        return b, None if s is None else np.asarray(s, np.float64).reshape(-1)
    a = np.asarray(arr, np.float64)
    if a.size == 0:
        return np.zeros((0, 4)), None
    a = a.reshape(len(a), -1)
    if a.shape[1] == 5:
        return a[:, :4], a[:, 4]
    if a.shape[1] == 4:
        return a, None
    raise ImportErrorWSOD(f"proposal arrays must be (N,4) or (N,5), got {a.shape}")


def _entries_pkl(obj: Any, path: Path, layout: str | None, images: Sequence[Mapping]) -> list:
    lay = layout or "xy"
    out = []
    if isinstance(obj, Mapping) and "boxes" in obj:  # PCL / wetectron
        ids_key = next((k for k in ("indexes", "ids", "image_ids", "images") if k in obj), None)
        if ids_key is None:
            raise ImportErrorWSOD(
                f"{path}: a PCL/wetectron proposal pickle needs 'indexes' or 'ids' next to 'boxes'"
            )
        boxes, ids = list(obj["boxes"]), list(obj[ids_key])
        scores = list(obj["scores"]) if obj.get("scores") is not None else [None] * len(boxes)
        if not len(boxes) == len(ids) == len(scores):
            raise ImportErrorWSOD(f"{path}: 'boxes', '{ids_key}' and 'scores' differ in length")
        for i, b, s in zip(ids, boxes, scores, strict=True):
            bb, ss = _split_arr(b)
            if s is not None:
                ss = np.asarray(s, np.float64).reshape(-1)
            out.append((i, convert_layout(bb, lay), ss))
    elif isinstance(obj, Mapping):  # mmdet contract
        for k, v in obj.items():
            bb, ss = _split_arr(v)
            out.append((k, convert_layout(bb, lay), ss))
    elif isinstance(obj, (list, tuple)):  # mmdet list aligned with the split order
        if len(obj) != len(images):
            raise ImportErrorWSOD(
                f"{path}: a proposal list must align with the split's images "
                f"({len(images)}), it has {len(obj)} entries"
            )
        for im, v in zip(images, obj, strict=True):
            bb, ss = _split_arr(v)
            out.append((im["file_name"], convert_layout(bb, lay), ss))
    else:
        raise ImportErrorWSOD(
            f"{path}: unknown proposal pickle content {type(obj).__name__}; "
            "expected a PCL/wetectron dict, an mmdet dict or a list"
        )
    return out


def import_proposals(
    path: str | os.PathLike,
    images: Sequence[Mapping],
    *,
    allow_pickle: bool = False,
    layout: str | None = None,
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], dict]:
    """Read a foreign proposal file and match its entries to split images.

    Args:
        path: ``.mat``, ``.pkl`` or ``.npz`` file (see the module docstring).
        images: the split's ``images`` (id, file_name, ...).
        allow_pickle: required for ``.pkl`` (unpickling runs code).
        layout: ``'yx1'`` or ``'xy'``; None = ``'yx1'`` for .mat, ``'xy'`` otherwise.

    Returns:
        ``(props, report)``: ``props`` maps a split ``file_name`` to ``(boxes (N,4) float64
        x1y1x2y2, scores (N,) or None)``; ``report`` has ``unmatched_entries`` (file keys that
        match no split image, as strings), ``missing_images`` (split file names without an
        entry) and ``duplicates``.
    """
    path = Path(path)
    if not path.is_file():
        raise ImportErrorWSOD(f"{path}: no such proposal file (check --import-file)")
    if layout is not None and layout not in LAYOUTS:
        raise ImportErrorWSOD(f"unknown box layout {layout!r}; choose one of {LAYOUTS}")
    suffix = path.suffix.lower()
    if suffix == ".mat":
        entries = _entries_mat(path, layout)
    elif suffix in (".pkl", ".pickle"):
        entries = _entries_pkl(read_pickle(path, allow_pickle), path, layout, images)
    elif suffix == ".npz":
        entries = _entries_pkl(read_npz(path), path, layout, images)
    else:
        raise ImportErrorWSOD(
            f"{path}: unknown proposal file type {suffix!r}; expected .mat, .pkl or .npz"
        )
    match = ImageMatcher(images)
    props: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    unmatched, dups = [], []
    for key, boxes, scores in entries:
        fn = match(key)
        if fn is None:
            unmatched.append(str(_name(key)))
            continue
        if fn in props:
            dups.append(fn)
        if scores is not None and len(scores) != len(boxes):
            raise ImportErrorWSOD(
                f"{path}: entry {key!r} has {len(boxes)} boxes and {len(scores)} scores"
            )
        props[fn] = (boxes, scores)
    missing = [im["file_name"] for im in images if im["file_name"] not in props]
    report = {
        "file": str(path),
        "entries": len(entries),
        "matched": len(props),
        "unmatched_entries": unmatched,
        "missing_images": missing,
        "duplicates": dups,
    }
    return props, report


def import_split(
    path: str | os.PathLike,
    images: Sequence[Mapping],
    *,
    allow_pickle: bool = False,
    layout: str | None = None,
    min_size: float = 8,
    max_boxes: int = 2000,
) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """Import ``path`` for every image of ``images`` and post-process the boxes.

    Every split image must have an entry (entries for other images are reported, not used).

    Returns:
        ``(proposals in images order, report)`` (``report`` as :func:`import_proposals`'s).

    Raises:
        ImportErrorWSOD: unreadable file, or split images without an entry (names examples).
    """
    raw, report = import_proposals(path, images, allow_pickle=allow_pickle, layout=layout)
    if report["missing_images"]:
        raise ImportErrorWSOD(
            f"{path}: {len(report['missing_images'])} of {len(images)} split images "
            f"have no proposals there (e.g. {report['missing_images'][:3]}); "
            f"{len(report['unmatched_entries'])} file entries matched no image (e.g. "
            f"{report['unmatched_entries'][:3]}). Use the split the file was made for"
        )
    props = {}
    for im in images:
        b, s = raw[im["file_name"]]
        bb, ss = postprocess(
            b, s, im["width"], im["height"], min_size=min_size, max_boxes=max_boxes
        )
        props[im["file_name"]] = {"bboxes": bb, "scores": ss}
    return props, report
