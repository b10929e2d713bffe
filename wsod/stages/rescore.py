"""Rescore stage: a detector's scores times the black box's image-level confidence.

For every detection of class c in image i, ``score' = score x m(i, c)``, where ``m(i, c)`` is
the highest score the black box gave class c anywhere in image i; detections of a class the
black box did not detect in their image are dropped. ``m`` is the black box's own belief that the image holds c, read from its detections
on the same images, so it works for any black box, built-in or imported. The CAM black box
multiplies its box scores by an image classifier's probability in the same way, which is why it
rarely fires on a class absent from the image; a detector retrained on pseudo boxes confuses
classes far more often (docs/results.md, "errors").

The rescored detector is the pair (retrained detector, black box): on new images both must
run. Training stages are untouched; no ground truth is read.

A pipeline's ``rescore_by_black_box`` picks where ``m`` comes from (:func:`black_box_mode`):
``1`` the black box's detections; ``image`` a CAM black box read as an image classifier, its
detections on one whole-image proposal per image with :data:`IMAGE_SCORES_CFG_OPTIONS` (no
proposals needed at test time); ``0`` no rescoring.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from wsod.contracts import load_detections, load_split
from wsod.utils.io import write_json_artifact

STAGE = "rescore"

# The CAM black box as an image classifier: each whole-image box is scored by the class
# probability alone (score_mode='image'), and no class is thresholded away (score_thr=0), so
# every (image, class) pair gets its confidence. Given to `wsod weak --cfg-options`.
IMAGE_SCORES_CFG_OPTIONS = {
    "model.roi_head.score_mode": "image",
    "model.roi_head.test_cfg.score_thr": 0,
}
BLACK_BOX_MODES = ("0", "1", "image")


def black_box_mode(value, weak_cfg=None, *, where: object = "pipeline") -> str:
    """A pipeline's ``rescore_by_black_box`` normalised: ``'0'`` (off; also None/False), ``'1'``
    (the black box's detections; also True) or ``'image'`` (a CAM's class probabilities).

    Args:
        value: the pipeline's value.
        weak_cfg: the weak config (mmengine ``Config``) when known: ``'image'`` needs a head
            with a ``score_mode`` (the CAM head).
        where: the pipeline file, named in errors.

    Raises:
        ValueError: for any other value, or ``'image'`` with a weak head that is not a CAM.
    """
    if isinstance(value, str):
        mode = value.lower()
    elif value is None or value in (0, 1):  # False and True too
        mode = str(int(bool(value)))
    else:
        mode = repr(value)
    if mode not in BLACK_BOX_MODES:
        raise ValueError(
            f"{where}: rescore_by_black_box = {value!r}; want 0, 1 or 'image' "
            "(0 off, 1 the black box's detections, 'image' a CAM's class probabilities)"
        )
    head = ((weak_cfg or {}).get("model") or {}).get("roi_head") or {}
    if mode == "image" and weak_cfg is not None and "score_mode" not in head:
        raise ValueError(
            f"{where}: rescore_by_black_box = 'image' reads a CAM black box's class "
            f"probabilities, but the weak config's head ({head.get('type')}) has no score_mode; "
            "use rescore_by_black_box = 1 (the black box's detections)"
        )
    return mode


def image_confidence(dets: Iterable[Mapping]) -> dict[tuple[int, int], float]:
    """``{(image_id, category_id): highest score}`` of a detector's detections."""
    best: dict[tuple[int, int], float] = {}
    for d in dets:
        key = (int(d["image_id"]), int(d["category_id"]))
        score = float(d["score"])
        if score > best.get(key, float("-inf")):
            best[key] = score
    return best


def rescore_detections(
    dets: Iterable[Mapping], confidence: Mapping[tuple[int, int], float]
) -> list[dict]:
    """Detections with ``score x confidence[(image_id, category_id)]``; those whose factor is
    missing or not positive (the black box never saw the class in that image) are dropped."""
    out = []
    for d in dets:
        m = confidence.get((int(d["image_id"]), int(d["category_id"])), 0.0)
        if m > 0:
            out.append(dict(d, score=float(d["score"]) * m))
    return out


def run(
    detections: str | os.PathLike,
    black_box: str | os.PathLike,
    out: str | os.PathLike,
    *,
    split: str | os.PathLike | None = None,
) -> dict:
    """Rescore ``detections`` by the image-level confidence of ``black_box`` and write ``out``.

    Args:
        detections: COCO results json of the detector to rescore.
        black_box: the black box's COCO results json on the same images.
        out: rescored COCO results json (``.meta.json`` beside it).
        split: the images' split json; when given, both files' image and category ids are
            checked against it.

    Returns:
        Summary dict (detection, kept, dropped and image counts).
    """
    started = time.time()
    split_d = load_split(split) if split is not None else None
    dets = load_detections(detections, split_d)
    bb = load_detections(black_box, split_d)
    if not bb:
        raise ValueError(
            f"{black_box}: no detections, so every rescored score would be 0; pass the black "
            "box's detections on the same images as --detections"
        )
    det_images = {int(d["image_id"]) for d in dets}
    bb_images = {int(d["image_id"]) for d in bb}
    if det_images and not det_images & bb_images:
        raise ValueError(
            f"{black_box}: none of its images is among the {len(det_images)} images of "
            f"{detections}; pass the black box's detections on the same split"
        )
    confidence = image_confidence(bb)
    rescored = rescore_detections(dets, confidence)
    summary = {
        "detections": len(dets),
        "kept": len(rescored),
        "dropped_no_black_box_score": len(dets) - len(rescored),
        "images": len(det_images),
        "images_without_black_box_detections": len(det_images - bb_images),
    }
    write_json_artifact(
        out,
        rescored,
        stage=STAGE,
        config={"factor": "max black-box score of the class in the image"},
        inputs=[p for p in (detections, black_box, split) if p is not None],
        started=started,
        extra={"summary": summary},
    )
    print(
        f"wsod rescore: {summary['kept']} of {summary['detections']} detections kept "
        f"({summary['dropped_no_black_box_score']} of classes the black box did not detect in "
        f"their image) -> {Path(out)}"
    )
    return summary
