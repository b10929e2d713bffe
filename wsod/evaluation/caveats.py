"""What the evaluated data lacks, as data: the caveats ``metrics.json`` and the report carry.

The caveats of a gt file come, first match wins, from

1. ``info.caveats`` of the gt file (a list of sentences), when the data stage writes one;
2. :data:`KNOWN_DATASETS`, keyed by :func:`dataset_identity`: ``info.dataset`` when the gt
   file names its dataset, else recognised from what the file holds (``info.format`` and the
   annotations' ``difficult`` flags);
3. a note for data this table does not know, naming its format and root.

The shared VOC 2007 copy (``../shared/data/README.md``) is recognised by its known defect: a
VOC-format file in which no box is flagged ``difficult`` (the export lost the flags; the
official annotations flag some objects of almost every split).
"""

from __future__ import annotations

from collections.abc import Mapping

from wsod.contracts import is_ignored

SHARED_VOC2007 = "voc2007-shared"
VOC = "voc"
DEMO = "demo"

KNOWN_DATASETS: dict[str, tuple[str, ...]] = {
    # the facts of ../shared/data/README.md
    SHARED_VOC2007: (
        "The evaluated split is VOC2007 'val' (half of the official val list), not the official "
        "VOC2007 test set, which is not available here; numbers are not comparable to published "
        "test-set figures.",
        "The shared VOC copy lost the 'difficult' flags: every object counts, including those the "
        "official protocol ignores, so AP here is lower than an official figure would be.",
        "In 166 train and 79 val images a class listed as present (almost always 'person') has no "
        "box in the shared copy, so some objects have no ground-truth box: correct detections of "
        "them count as false positives.",
    ),
    VOC: (
        "VOC-format data with 'difficult' flags: flagged boxes are ignored, as the official "
        "protocol does; compare with published figures only when the evaluated split is the "
        "one they were measured on.",
    ),
    DEMO: (
        "The evaluated data is the synthetic demo dataset: the numbers test the pipeline, they say "
        "nothing about detection on real images.",
    ),
}


def dataset_identity(gt: Mapping) -> str | None:
    """The :data:`KNOWN_DATASETS` key of a gt dict, or None for data the table does not know.

    ``info.dataset`` when set; else ``demo`` for the demo format; for VOC (``info.format``
    ``voc`` or absent) :data:`SHARED_VOC2007` when no box is ignored, else :data:`VOC`.
    """
    info = gt.get("info") or {}
    if info.get("dataset"):
        return str(info["dataset"])
    fmt = info.get("format")
    if fmt == DEMO:
        return DEMO
    if fmt in (None, VOC):
        return VOC if any(is_ignored(a) for a in gt["annotations"]) else SHARED_VOC2007
    return None


def caveats_for(gt: Mapping) -> list[str]:
    """The caveats of a gt dict (see the module docstring for where they come from)."""
    info = gt.get("info") or {}
    if info.get("caveats"):
        return [str(c) for c in info["caveats"]]
    known = KNOWN_DATASETS.get(dataset_identity(gt) or "")
    if known is not None:
        return list(known)
    return [
        f"Custom {info.get('format')} data from {info.get('data_root')}: check its own notes on "
        "missing or ignored boxes; 'difficult' is honoured only where the gt file sets it."
    ]
