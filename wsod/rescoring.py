"""Rescoring by the black box: its image-level confidence as a factor on another detector's
scores. The rules every layer reads (the pipeline file's ``rescore_by_black_box``, the weak
config overrides that read a CAM as an image classifier) and the plain arithmetic; the stage
that writes the rescored file is :mod:`wsod.stages.rescore`.

For every detection of class c in image i, ``score' = score x m(i, c)``, where ``m(i, c)`` is
the highest score the black box gave class c anywhere in image i; detections of a class the
black box did not detect in their image are dropped. A pipeline's ``rescore_by_black_box``
picks where ``m`` comes from (:func:`black_box_mode`): ``'detections'`` the black box's
detections (any black box, built-in or imported); ``'image'`` a CAM black box read as an image
classifier, its detections on one whole-image proposal per image with
:data:`IMAGE_SCORES_CFG_OPTIONS` (no proposals needed at test time); ``'off'`` no rescoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# The CAM black box as an image classifier: each whole-image box is scored by the class
# probability alone (scoring type 'image'), and no class is thresholded away (score_thr=0), so
# every (image, class) pair gets its confidence. Given to `wsod weak --cfg-options`.
IMAGE_SCORES_CFG_OPTIONS = {
    "model.roi_head.scoring.type": "image",
    "model.roi_head.test_cfg.score_thr": 0,
}
OFF, DETECTIONS, IMAGE = "off", "detections", "image"
BLACK_BOX_MODES = (OFF, DETECTIONS, IMAGE)
# the values pipelines wrote before the modes had names
LEGACY_MODES = {"0": OFF, "1": DETECTIONS, "false": OFF, "true": DETECTIONS}


def black_box_mode(value, weak_cfg=None, *, where: object = "pipeline") -> str:
    """A pipeline's ``rescore_by_black_box`` normalised to one of :data:`BLACK_BOX_MODES`:
    ``'off'`` (also None), ``'detections'`` (the black box's detections) or ``'image'`` (a CAM's
    class probabilities). The older values 0/False and 1/True mean ``'off'`` and
    ``'detections'``.

    Args:
        value: the pipeline's value.
        weak_cfg: the weak config (mmengine ``Config``) when known: ``'image'`` needs a head
            with ``scoring`` (the CAM head).
        where: the pipeline file, named in errors.

    Raises:
        ValueError: for any other value, or ``'image'`` with a weak head that is not a CAM.
    """
    if isinstance(value, str):
        mode = LEGACY_MODES.get(value.lower(), value.lower())
    elif value is None or value in (0, 1):  # False and True too
        mode = DETECTIONS if value else OFF
    else:
        mode = repr(value)
    if mode not in BLACK_BOX_MODES:
        raise ValueError(
            f"{where}: rescore_by_black_box = {value!r}; want 'off', 'detections' or 'image' "
            "(the black box's detections, or a CAM's class probabilities on the whole image)"
        )
    head = ((weak_cfg or {}).get("model") or {}).get("roi_head") or {}
    if mode == IMAGE and weak_cfg is not None and "scoring" not in head:
        raise ValueError(
            f"{where}: rescore_by_black_box = 'image' reads a CAM black box's class "
            f"probabilities, but the weak config's head ({head.get('type')}) has no scoring; "
            "use rescore_by_black_box = 'detections' (the black box's detections)"
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
