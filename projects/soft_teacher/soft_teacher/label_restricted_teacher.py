"""Soft Teacher whose pseudo boxes stay inside each image's labels.

Weak supervision where it is legitimate: every train image's image-level labels are known, so a
teacher box of a class the image does not hold is certainly wrong. mmdet's ``SoftTeacher``
keeps the teacher's boxes above ``pseudo_label_initial_score_thr`` of any class;
:class:`WSODLabelRestrictedSoftTeacher` drops those of classes outside the image's labels
(``metainfo['image_labels']``, class indices, from :class:`WSODImageLabelCocoDataset`) before the
student learns from them. Several boxes of one labelled class survive: the teacher mines the
objects the one-box-per-class pseudo labels missed. With ``semi_train_cfg.top1_per_image_label``
a labelled class whose boxes all score below ``pseudo_label_initial_score_thr`` keeps its best
one (:func:`select_pseudo_instances`): an unlabelled image never teaches background where its
label says an object is. The training log shows the teacher's boxes per unlabelled image above
the threshold, kept and promoted (``pseudo_boxes_teacher``, ``pseudo_boxes_in_labels``,
``pseudo_boxes_promoted``). Nothing else of ``SoftTeacher`` changes (box jitter uncertainty,
background weighting by the teacher, the mean-teacher update by mmdet's ``MeanTeacherHook``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from mmdet.models.detectors import SoftTeacher
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_project

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
    ``projects/soft_teacher/configs/``).
    """

    # the semi_train_cfg keys mmdet's SemiBaseDetector / SoftTeacher read, and this class's
    SEMI_TRAIN_KEYS = frozenset(
        {
            "freeze_teacher", "sup_weight", "unsup_weight", "pseudo_label_initial_score_thr",
            "rpn_pseudo_thr", "cls_pseudo_thr", "reg_pseudo_thr", "jitter_times",
            "jitter_scale", "min_pseudo_bbox_wh", "top1_per_image_label",
        }
    )  # fmt: skip

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        unknown = set(self.semi_train_cfg or {}) - self.SEMI_TRAIN_KEYS
        if unknown:  # mmdet reads them with .get(): a misspelled key would be ignored
            import difflib

            near = {k: difflib.get_close_matches(k, self.SEMI_TRAIN_KEYS, n=1) for k in unknown}
            hints = ", ".join(
                f"{k}" + (f" (did you mean {m[0]}?)" if m else "") for k, m in near.items()
            )
            raise ValueError(
                f"WSODLabelRestrictedSoftTeacher: unknown semi_train_cfg keys: {hints}; known: "
                f"{', '.join(sorted(self.SEMI_TRAIN_KEYS))}"
            )

    def loss(self, multi_batch_inputs, multi_batch_data_samples) -> dict:
        """``SoftTeacher``'s losses; the labelled branch alone while ``unsup_weight`` is 0 (the
        burn-in of :class:`~projects.soft_teacher.soft_teacher.burn_in_hook.WSODBurnInHook`: no teacher pass, no
        student pass on the unlabelled images)."""
        if float(self.semi_train_cfg.get("unsup_weight", 1.0)) == 0.0:
            return self.loss_by_gt_instances(
                multi_batch_inputs["sup"], multi_batch_data_samples["sup"]
            )
        return super().loss(multi_batch_inputs, multi_batch_data_samples)

    @torch.no_grad()
    def get_pseudo_instances(self, batch_inputs, batch_data_samples):
        """The teacher's boxes on the unlabelled images (the weak view), restricted to each
        image's labels and thresholded (:func:`select_pseudo_instances`), with ``SoftTeacher``'s
        box-jitter uncertainty (``reg_uncs``) and projected back to the original image.

        ``SoftTeacher.get_pseudo_instances`` with the selection step replaced: its score
        threshold alone would drop the teacher's best box of a class the image label says is
        there; ``semi_train_cfg.top1_per_image_label=True`` keeps it.
        """
        for sample in batch_data_samples:
            if IMAGE_LABELS_KEY not in sample.metainfo:
                raise KeyError(
                    f"{sample.metainfo.get('img_path', 'an unlabelled image')}: no "
                    f"'{IMAGE_LABELS_KEY}' in the teacher branch's metainfo; add it to that "
                    "branch's PackDetInputs meta_keys and use WSODImageLabelCocoDataset "
                    "(projects/soft_teacher/configs/)"
                )
        x = self.teacher.extract_feat(batch_inputs)
        proposals = self.teacher.rpn_head.predict(x, batch_data_samples, rescale=False)
        results = self.teacher.roi_head.predict(x, proposals, batch_data_samples, rescale=False)
        cfg = self.semi_train_cfg
        thr = float(cfg.pseudo_label_initial_score_thr)
        counts = [0, 0, 0]  # above the threshold (any class), kept, promoted
        for sample, found in zip(batch_data_samples, results, strict=True):
            counts[0] += int((found.scores > thr).sum())
            sample.gt_instances, promoted = select_pseudo_instances(
                found,
                sample.metainfo[IMAGE_LABELS_KEY],
                thr,
                bool(cfg.get("top1_per_image_label", False)),
            )
            counts[1] += len(sample.gt_instances)
            counts[2] += promoted
        uncertainties = self.compute_uncertainty_with_aug(x, batch_data_samples)
        device = self.data_preprocessor.device
        for sample, reg_uncs in zip(batch_data_samples, uncertainties, strict=True):
            sample.gt_instances["reg_uncs"] = reg_uncs
            to_original = torch.from_numpy(sample.homography_matrix).inverse().to(device)
            sample.gt_instances.bboxes = bbox_project(
                sample.gt_instances.bboxes, to_original, sample.ori_shape
            )
        _log_counts(*counts, len(batch_data_samples))
        info = {
            "feat": x,
            "img_shape": [s.img_shape for s in batch_data_samples],
            "homography_matrix": [
                torch.from_numpy(s.homography_matrix).to(device) for s in batch_data_samples
            ],
            "metainfo": [s.metainfo for s in batch_data_samples],
        }
        return batch_data_samples, info


def select_pseudo_instances(found, image_labels: Iterable[int], thr: float, top1: bool):
    """The teacher's pseudo boxes on one image: the classes of its label, scores above ``thr``,
    and (``top1``) for every labelled class without such a box its best-scoring box anyway,
    its score set to 1 so that the later RPN / RoI thresholds keep it (the image label vouches
    for the class; the box is the teacher's best guess of where).

    Args:
        found: the teacher's ``InstanceData`` (``bboxes``, ``scores``, ``labels``).
        image_labels: the image's class indices (0-based).
        thr: ``pseudo_label_initial_score_thr``.
        top1: promote each labelled class's best box when none passes ``thr``.

    Returns:
        (``InstanceData`` subset, number of promoted boxes).
    """
    found = restrict_to_image_labels(found, image_labels)
    keep = found.scores > thr
    promoted = 0
    if top1 and len(found):
        scores = found.scores.clone()
        for c in found.labels.unique():
            of_class = found.labels == c
            if not (keep & of_class).any():
                best = torch.where(of_class, scores, scores.new_tensor(-1.0)).argmax()
                keep[best] = True
                scores[best] = 1.0
                promoted += 1
        found.scores = scores
    return found[keep], promoted


def _log_counts(before: int, after: int, promoted: int, images: int) -> None:
    """Teacher boxes per unlabelled image above the score threshold (any class), kept (image
    classes; promoted included) and promoted, in the training log (mmengine's message hub:
    ``train/`` scalars are logged with the losses)."""
    from mmengine.logging import MessageHub

    hub = MessageHub.get_current_instance()
    hub.update_scalar("train/pseudo_boxes_teacher", before / max(images, 1))
    hub.update_scalar("train/pseudo_boxes_in_labels", after / max(images, 1))
    hub.update_scalar("train/pseudo_boxes_promoted", promoted / max(images, 1))
