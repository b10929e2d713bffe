"""``WSODUnlabelledImages``: the unlabelled images of a semi-supervised strong config.

The strong stage's plug-in (:mod:`wsod.training.extra_inputs`): the config names it as
``strong_inputs = dict(type='WSODUnlabelledImages', which='rest')``. The stage then writes
``[fsd_]unlabeled_images.json``, a weak-label split of the training images without boxes
(``which='rest'``) or of every training image (``'all'``), with their image-level labels from
``train_split`` (default: the training file's ``info.split_file``, which ``wsod denoise``
writes; the fully supervised reference without one: its boxes' classes). The config's
``ConcatDataset`` of [labelled, unlabelled] datasets is wired to the training annotations and
to that file. Which images lose their boxes is the de-noise chain's choice (``image_filter``,
``reliable_images``). Never a ground-truth box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wsod import contracts
from wsod.training.extra_inputs import STRONG_INPUTS, ExtraInputs, StrongInputs, TrainingSet

from .split import UNLABELED_CHOICES, labels_from_boxes, unlabeled_split


def _split_file(info: Mapping, path: Path) -> Path | None:
    """The training file's ``info.split_file`` (relative: to the cwd, else to its folder)."""
    if not info.get("split_file"):
        return None
    split_path = Path(info["split_file"])
    if not split_path.is_absolute() and not split_path.is_file():
        split_path = Path(path).parent / split_path
    return split_path


def image_labels(training: TrainingSet) -> tuple[dict[int, list[int]], Path | None]:
    """``({image_id: category ids}, split path or None)`` for every training image.

    Raises:
        ValueError: no split to read them from, or a split of other images or classes.
    """
    train_ann, train_file = training.annotations, training.train_file
    split_path = training.train_split or _split_file(train_ann.get("info") or {}, train_file)
    if split_path is None:
        if training.fully_supervised:  # the reference's real boxes name their classes
            return labels_from_boxes(train_ann), None
        raise ValueError(
            f"{train_file}: the semi-supervised config needs the train images' image-level "
            "labels; pass train_split= (--train-split TRAIN_SPLIT_JSON) or write "
            "info.split_file in the pseudo labels"
        )
    split = contracts.load_split(split_path)
    labels = {int(im["id"]): list(im["labels"]) for im in split["images"]}
    missing = [im["file_name"] for im in train_ann["images"] if int(im["id"]) not in labels]
    if missing or contracts.category_names(split) != contracts.category_names(train_ann):
        raise ValueError(
            f"{split_path}: not the split {train_file} was made from ({len(missing)} training "
            f"images missing, e.g. {missing[:2]}, or other classes); pass that split"
        )
    return labels, Path(split_path)


@STRONG_INPUTS.register_module()
class WSODUnlabelledImages(StrongInputs):
    """The unlabelled images of a semi-supervised strong config.

    Args:
        which: ``'rest'`` (the training images without boxes) or ``'all'`` (every one).
    """

    def __init__(self, which: str = "rest") -> None:
        if which not in UNLABELED_CHOICES:
            raise ValueError(
                f"strong_inputs.which={which!r}: choose one of {', '.join(UNLABELED_CHOICES)}"
            )
        self.which = which

    def make(self, cfg: Any, training: TrainingSet) -> ExtraInputs:
        labels, labels_from = image_labels(training)
        info = {"data_root": str(training.data_root), "split": "unlabeled"}
        info["unlabeled_images"] = self.which
        try:
            data = unlabeled_split(training.annotations, labels, self.which, info)
        except ValueError as e:
            raise ValueError(f"{training.config}: {e}") from e
        if not data["images"]:
            raise ValueError(
                f"{training.train_file}: every training image has pseudo boxes, so "
                f"{training.config} has no unlabelled image; leave the unreliable images "
                "without boxes in the de-noise chain (reliable_images, image_filter) or use "
                "every image as unlabelled (--cfg-options strong_inputs.which=all)"
            )
        return ExtraInputs(
            name="unlabeled",
            path=training.work_dir / f"{training.prefix}unlabeled_images.json",
            data=data,
            inputs=[labels_from] if labels_from else [],
            record={"unlabeled_images": len(data["images"])},
        )

    def wire(
        self, cfg: Any, set_dataset: Callable[[Any, Path], None], ann_path: Path, extra: ExtraInputs
    ) -> None:
        datasets = cfg.train_dataloader.dataset.get("datasets")
        if not isinstance(datasets, list | tuple) or len(datasets) != 2:
            raise ValueError(
                "a semi-supervised config's train_dataloader.dataset must be a ConcatDataset "
                "of [labelled, unlabelled] datasets (see projects/soft_teacher/configs/)"
            )
        set_dataset(datasets[0], ann_path)
        set_dataset(datasets[1], extra.path)
