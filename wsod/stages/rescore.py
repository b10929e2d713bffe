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

The rules (``rescore_by_black_box``'s modes, the CAM's image-classifier overrides) and the
arithmetic live in :mod:`wsod.rescoring`; this stage writes the rescored file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from wsod.contracts import load_detections, load_split
from wsod.rescoring import image_confidence, rescore_detections
from wsod.utils.io import write_json_artifact

STAGE = "rescore"
__all__ = ["image_confidence", "rescore_detections", "run"]


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
