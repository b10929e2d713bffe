"""Soft Teacher whose pseudo boxes stay inside each image's labels.

Weak supervision where it is legitimate: every train image's image-level labels are known, so a
teacher box of a class the image does not hold is certainly wrong. mmdet's ``SoftTeacher``
keeps the teacher's boxes above ``pseudo_label_initial_score_thr`` of any class;
:class:`WSODLabelRestrictedSoftTeacher` drops those of classes outside the image's labels
(``metainfo['image_labels']``, class indices, from :class:`WSODImageLabelCocoDataset`) before the
student learns from them. Several boxes of one labelled class survive: the teacher mines the
objects the one-box-per-class pseudo labels missed. The training log shows the teacher's boxes
per unlabelled image before and after the restriction (``pseudo_boxes_teacher``,
``pseudo_boxes_in_labels``, above ``pseudo_label_initial_score_thr``). Nothing else of ``SoftTeacher`` changes
(box jitter uncertainty, background weighting by the teacher, the mean-teacher update by mmdet's
``MeanTeacherHook``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from mmdet.models.detectors import SoftTeacher
from mmdet.registry import MODELS

from .image_label_data import IMAGE_LABELS_KEY


def restrict_to_image_labels(instances, image_labels: Iterable[int]):
    """The instances whose ``labels`` are among ``image_labels``.

    Args:
        instances: mmengine ``InstanceData`` with ``labels`` (N,) class indices and any other
            per-instance fields (``bboxes`` (N,4) x1y1x2y2, ``scores``, ``reg_uncs``: all kept
            aligned).
        image_labels: the image's class indices (0-based).

    Returns:
        The ``InstanceData`` subset (a new object; ``instances`` is unchanged).
    """
    labels = instances.labels
    allowed = torch.as_tensor(sorted(set(int(c) for c in image_labels)), dtype=labels.dtype)
    keep = torch.isin(labels, allowed.to(labels.device))
    return instances[keep]


@MODELS.register_module()
class WSODLabelRestrictedSoftTeacher(SoftTeacher):
    """mmdet's ``SoftTeacher`` with the teacher's pseudo boxes restricted to the image labels.

    Config: as ``SoftTeacher`` (``detector``, ``semi_train_cfg``, ``semi_test_cfg``,
    ``MultiBranchDataPreprocessor``); the unlabelled images' teacher branch must pack
    ``image_labels`` into its metainfo (``PackDetInputs(meta_keys=(..., 'image_labels'))``,
    ``configs/soft_teacher/``).
    """

    @torch.no_grad()
    def get_pseudo_instances(self, batch_inputs, batch_data_samples):
        """The teacher's pseudo instances (``SoftTeacher``), then only the labelled classes."""
        for sample in batch_data_samples:
            if IMAGE_LABELS_KEY not in sample.metainfo:
                raise KeyError(
                    f"{sample.metainfo.get('img_path', 'an unlabelled image')}: no "
                    f"'{IMAGE_LABELS_KEY}' in the teacher branch's metainfo; add it to that "
                    "branch's PackDetInputs meta_keys and use WSODImageLabelCocoDataset "
                    "(configs/soft_teacher/)"
                )
        batch_data_samples, batch_info = super().get_pseudo_instances(
            batch_inputs, batch_data_samples
        )
        before = sum(len(sample.gt_instances) for sample in batch_data_samples)
        for sample in batch_data_samples:
            sample.gt_instances = restrict_to_image_labels(
                sample.gt_instances, sample.metainfo[IMAGE_LABELS_KEY]
            )
        after = sum(len(sample.gt_instances) for sample in batch_data_samples)
        _log_counts(before, after, len(batch_data_samples))
        return batch_data_samples, batch_info


def _log_counts(before: int, after: int, images: int) -> None:
    """Teacher boxes per unlabelled image, before and after the restriction, in the training
    log (mmengine's message hub: ``train/`` scalars are logged with the losses)."""
    from mmengine.logging import MessageHub

    hub = MessageHub.get_current_instance()
    hub.update_scalar("train/pseudo_boxes_teacher", before / max(images, 1))
    hub.update_scalar("train/pseudo_boxes_in_labels", after / max(images, 1))
