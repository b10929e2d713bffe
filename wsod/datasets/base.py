"""What every dataset loader returns, plus the checks they share.

A loader reads one split into a :class:`SplitData` held in memory; nothing is written until
every requested split has been read and checked (see ``wsod.stages.data``), so bad input never
leaves a partial file behind.

Box convention: ``SplitData.annotations`` carry COCO ``bbox`` = ``[x, y, w, h]`` in 0-based
continuous pixel coordinates (the corners are ``x1, y1 = x, y`` and ``x2, y2 = x + w, y + h``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# full entropy decoding (where corruption shows) at an eighth of the size: the inverse DCT and
# colour conversion, which cannot warn, are mostly skipped
DECODE_FLAGS = 64  # cv2.IMREAD_REDUCED_GRAYSCALE_8 (cv2 is imported lazily)

SKIP_HINT = "rerun with --skip-bad (skip_bad=True) to skip and count it"


class DatasetError(ValueError):
    """Bad dataset input; the message names the file and what to do."""


@dataclass
class SplitData:
    """One split read into memory.

    Attributes:
        name: split name (``train``, ``val``, ...).
        data_root: absolute dataset root; every ``file_name`` is relative to it.
        classes: class names; category id ``k`` (1-based) is ``classes[k - 1]``.
        format: loader name (``voc``, ``csv``, ``coco``, ``demo``).
        images: ``[{id, file_name, width, height, labels}]``, labels = sorted category ids.
        annotations: eval-only boxes ``[{image_id, category_id, bbox: [x, y, w, h], difficult}]``.
        skipped: ``[{item, file, reason}]`` for items left out under ``skip_bad``.
        has_boxes: whether the source had ground-truth boxes at all.
        boxed_images: ids of the images whose boxes were given, when a box source covers only
            some images (csv ``--boxes``); None: all images (or none, with ``has_boxes`` false).
        inputs: list/label files read (hashed into the ``.meta.json`` sidecar).
    """

    name: str
    data_root: Path
    classes: list[str]
    format: str
    images: list[dict] = field(default_factory=list)
    annotations: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    has_boxes: bool = True
    boxed_images: list[int] | None = None
    inputs: list[str] = field(default_factory=list)


class BadItem(Exception):
    """One item (image) is bad; the loader either raises a DatasetError or skips it."""

    def __init__(self, file: str | os.PathLike, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file = str(file)
        self.reason = reason


def handle_bad(
    data: SplitData, item: Any, err: BadItem, skip_bad: bool, where: str | None = None
) -> None:
    """Raise a :class:`DatasetError` for a bad item, or record it as skipped.

    ``where`` (``list.csv:7``) is the line of a list file that names the item: the message
    starts with it, and a skipped record keeps it as ``line``.
    """
    if not skip_bad:
        raise DatasetError(
            f"{f'{where}: ' if where else ''}{err.file}: {err.reason} (split '{data.name}'); "
            f"fix or remove it, or {SKIP_HINT}"
        ) from None
    rec = {"item": str(item), "file": err.file, "reason": err.reason}
    data.skipped.append({**rec, "line": where} if where else rec)


# EXIF orientations (tag 0x0112) that turn the stored image a quarter turn for display
_QUARTER_TURNS = (5, 6, 7, 8)
EXIF_ORIENTATION = 0x0112


def image_size(path: Path, decode: bool = True) -> tuple[int, int]:
    """Readability check of an image file; returns its ``(width, height)`` as displayed.

    As displayed: with the EXIF orientation applied (a phone photo stored 4000x3000 with
    orientation 6 is 3000x4000), as OpenCV's ``imread`` and mmcv's loaders give its pixels to
    every later stage (the data contract's ``image_sizes``, see :mod:`wsod.contracts`).

    Reads the header (PIL ``open`` + ``verify``), checks that a JPEG still ends with its
    end-of-image marker (catches truncated downloads), then decodes the pixels once
    (:func:`decode_check`, unless ``decode=False``): data corrupted in the middle of a file
    whose header and end are intact only shows there, as a decoder warning. The decoded shape
    must agree with the size (the orientation as OpenCV applied it).

    Raises:
        BadItem: the file is missing, unreadable, not an image, truncated or corrupt.
    """
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        raise BadItem(path, "image file is missing")
    try:
        with Image.open(path) as im:
            fmt = im.format
            size = im.size
            turned = _orientation(im) in _QUARTER_TURNS
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise BadItem(path, f"image is corrupt or unreadable ({type(e).__name__}: {e})") from e
    if fmt == "JPEG":
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - 4096))
            if b"\xff\xd9" not in f.read():
                raise BadItem(path, "JPEG is truncated (no end-of-image marker)")
    if size[0] <= 0 or size[1] <= 0:
        raise BadItem(path, f"image has an empty size {size}")
    w, h = (size[1], size[0]) if turned else size
    if decode:
        shape = decode_check(path)
        if not _reduced_of(shape, w, h) and _reduced_of(shape, h, w):  # OpenCV turned it
            w, h = h, w
    return int(w), int(h)


def _orientation(im) -> int:
    """The EXIF orientation of an open PIL image (1 when absent or unreadable: damaged EXIF
    does not make the pixels unusable; the decoded shape settles the size then)."""
    try:
        return int(im.getexif().get(EXIF_ORIENTATION, 1))
    except Exception:  # noqa: BLE001 - any EXIF parsing failure
        return 1


def _reduced_of(shape: tuple[int, int], w: int, h: int) -> bool:
    """Whether ``shape`` (rows, cols) is an image ``w`` x ``h`` decoded at an eighth
    (:data:`DECODE_FLAGS`; rounded up or down by the decoder)."""
    return abs(shape[0] - h / 8) < 1 and abs(shape[1] - w / 8) < 1


# libpng's colour-profile notes describe metadata, not pixels: not a sign of a corrupt image
_BENIGN_DECODER_LINES = ("libpng warning: iCCP:", "libpng warning: sRGB:")


@contextlib.contextmanager
def _captured_fd2():
    """Collect what C libraries write to file descriptor 2 (stderr) inside the block.

    libjpeg reports recoverable damage ("Corrupt JPEG data: ...") only by printing it there,
    without the file name; the text collected is appended to the yielded list.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    text: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text.append(tmp.read().decode(errors="replace"))


def decode_check(path: Path) -> tuple[int, int]:
    """Decode ``path`` once with OpenCV (the decoder the later stages read images with), at an
    eighth of its size (:data:`DECODE_FLAGS`; EXIF orientation applied, as later stages do).

    Returns:
        The decoded ``(rows, cols)``.

    Raises:
        BadItem: the image cannot be decoded, or the decoder warns while decoding it (e.g.
            libjpeg's "Corrupt JPEG data"): later stages would train on damaged pixels.
    """
    import cv2
    import numpy as np

    buf = np.fromfile(path, np.uint8)
    with _captured_fd2() as err:
        img = cv2.imdecode(buf, DECODE_FLAGS)
    lines = [ln.strip() for ln in "".join(err).splitlines() if ln.strip()]
    warned = [ln for ln in lines if not ln.startswith(_BENIGN_DECODER_LINES)]
    if img is None:
        raise BadItem(path, "image is corrupt or unreadable (OpenCV cannot decode it)")
    if warned:
        raise BadItem(path, f"image data is corrupt (the decoder warns: {'; '.join(warned)})")
    return int(img.shape[0]), int(img.shape[1])


def image_id_of(stem: str, fallback: int) -> int:
    """``int(stem)`` when the file stem is numeric (VOC ``000005`` -> 5), else ``fallback``."""
    return int(stem) if stem.isdigit() else fallback


def assign_ids(stems: list[str]) -> list[int]:
    """Image ids for a list of file stems: ``int(stem)`` if all are numeric and unique, else
    1..N in list order."""
    if stems and all(s.isdigit() for s in stems):
        ids = [int(s) for s in stems]
        if len(set(ids)) == len(ids):
            return ids
    return list(range(1, len(stems) + 1))
