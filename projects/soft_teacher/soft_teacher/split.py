"""The labelled / unlabelled split of a semi-supervised strong run (pure data, no mmdet).

Labelled: the training images with at least one box in the training annotations (mmdet's
``filter_empty_gt`` keeps exactly these). Unlabelled: the other images (``'rest'``) or every
image (``'all'``), written as a weak-label split (images with their ``labels``, no boxes) that
:class:`projects.soft_teacher.soft_teacher.WSODImageLabelCocoDataset` reads. Which images lost their boxes is the
de-noise chain's decision (``image_filter``, ``reliable_images``).
"""

from __future__ import annotations

from collections.abc import Mapping

UNLABELED_CHOICES = ("rest", "all")
"""``unlabeled_images`` values of a semi-supervised config."""


def labelled_image_ids(train_ann: Mapping) -> set[int]:
    """Ids of the images with at least one annotation (ignore regions count, as in mmdet)."""
    return {int(a["image_id"]) for a in train_ann["annotations"]}


def labels_from_boxes(train_ann: Mapping) -> dict[int, list[int]]:
    """``{image_id: sorted category ids of its boxes}`` (for real boxes: the image labels)."""
    labels: dict[int, set[int]] = {int(im["id"]): set() for im in train_ann["images"]}
    for a in train_ann["annotations"]:
        labels[int(a["image_id"])].add(int(a["category_id"]))
    return {i: sorted(c) for i, c in labels.items()}


def unlabeled_split(
    train_ann: Mapping, image_labels: Mapping[int, list[int]], which: str, info: Mapping
) -> dict:
    """The unlabelled images as a weak-label split.

    Args:
        train_ann: the training annotations (COCO instances: ``images``, ``categories``,
            ``annotations``).
        image_labels: ``{image_id: category ids}`` for every image of ``train_ann``.
        which: ``'rest'`` (images without a box) or ``'all'`` (every image).
        info: the split's ``info`` (``data_root`` at least).

    Returns:
        ``{"info", "images": [{id, file_name, width, height, labels}], "categories"}``.

    Raises:
        ValueError: ``which`` unknown, or an image without labels in ``image_labels``.
    """
    if which not in UNLABELED_CHOICES:
        raise ValueError(f"unlabeled_images={which!r}: choose one of {UNLABELED_CHOICES}")
    boxed = labelled_image_ids(train_ann) if which == "rest" else set()
    images = []
    for im in train_ann["images"]:
        if int(im["id"]) in boxed:
            continue
        if int(im["id"]) not in image_labels:
            raise ValueError(f"image {im['id']} ({im['file_name']}) has no image-level labels")
        keep = {k: im[k] for k in ("id", "file_name", "width", "height")}
        images.append({**keep, "labels": sorted(int(c) for c in image_labels[int(im["id"])])})
    return {"info": dict(info), "images": images, "categories": list(train_ann["categories"])}
