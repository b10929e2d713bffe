"""``WSODWeakDetector``: backbone (+ neck) + a MIL RoI head over precomputed proposals.

The detector is small on purpose; the method lives in the head (``WSODWSDDNHead``,
``WSODOICRHead``). Each data sample carries ``proposals.bboxes`` (R, 4) x1y1x2y2 in the input
image's pixels and the image-level labels in ``metainfo['image_labels']`` (0-based class
indices, see ``wsod.datasets.weak_dataset``). Training never sees a box annotation.
"""

from __future__ import annotations

from mmdet.models.detectors.base import BaseDetector
from mmdet.registry import MODELS
from mmdet.structures import SampleList
from torch import Tensor


@MODELS.register_module()
class WSODWeakDetector(BaseDetector):
    """Weakly supervised detector over precomputed proposals.

    Args:
        backbone: backbone config (e.g. ``WSODMobileNetV2``, ``WSODVGG16``).
        roi_head: MIL head config (``WSODWSDDNHead`` or ``WSODOICRHead``).
        neck: optional neck config.
        data_preprocessor: usually ``DetDataPreprocessor`` (normalise, pad).
    """

    def __init__(
        self,
        backbone: dict,
        roi_head: dict,
        neck: dict | None = None,
        data_preprocessor: dict | None = None,
        train_cfg: dict | None = None,
        test_cfg: dict | None = None,
        init_cfg: dict | None = None,
    ) -> None:
        super().__init__(data_preprocessor=data_preprocessor, init_cfg=init_cfg)
        self.backbone = MODELS.build(backbone)
        self.neck = MODELS.build(neck) if neck is not None else None
        self.roi_head = MODELS.build(roi_head)
        self.train_cfg = train_cfg
        self.test_cfg = test_cfg

    def extract_feat(self, batch_inputs: Tensor) -> tuple[Tensor, ...]:
        """(B, 3, H, W) -> tuple of feature maps."""
        x = self.backbone(batch_inputs)
        if self.neck is not None:
            x = self.neck(x)
        return tuple(x)

    @staticmethod
    def _unpack(batch_data_samples: SampleList) -> tuple[list, list, list]:
        boxes, scores, labels = [], [], []
        for ds in batch_data_samples:
            p = ds.proposals
            b = p.bboxes
            b = b.tensor if hasattr(b, "tensor") else b
            boxes.append(b.float())
            scores.append(p.scores if "scores" in p else b.new_zeros(len(b)))
            labels.append(list(ds.metainfo.get("image_labels", [])))
        return boxes, scores, labels

    def loss(self, batch_inputs: Tensor, batch_data_samples: SampleList) -> dict:
        feats = self.extract_feat(batch_inputs)
        boxes, scores, labels = self._unpack(batch_data_samples)
        return self.roi_head.loss(feats, boxes, scores, labels)

    def predict(
        self, batch_inputs: Tensor, batch_data_samples: SampleList, rescale: bool = True
    ) -> SampleList:
        """Adds ``pred_instances`` (bboxes x1y1x2y2 in original pixels when ``rescale``,
        scores, 0-based labels) to each sample."""
        feats = self.extract_feat(batch_inputs)
        boxes, scores, _ = self._unpack(batch_data_samples)
        metas = [ds.metainfo for ds in batch_data_samples]
        results = self.roi_head.predict(feats, boxes, scores, metas, rescale=rescale)
        return self.add_pred_to_datasample(batch_data_samples, results)

    def _forward(self, batch_inputs: Tensor, batch_data_samples: SampleList | None = None):
        feats = self.extract_feat(batch_inputs)
        boxes, scores, _ = self._unpack(batch_data_samples)
        return self.roi_head.proposal_class_scores(feats, boxes, scores)
