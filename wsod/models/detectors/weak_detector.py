"""``WSODWeakDetector``: backbone (+ neck) + a MIL RoI head over precomputed proposals.

The detector is small on purpose; the method lives in the head (``WSODWSDDNHead``,
``WSODOICRHead``). Each data sample carries ``proposals.bboxes`` (R, 4) x1y1x2y2 in the input
image's pixels and the image-level labels in ``metainfo['image_labels']`` (0-based class
indices, see ``wsod.datasets.weak_dataset``). Training never sees a box annotation.

Test-time augmentation (``test_cfg=dict(flip=True, scales=(0.75, 1.0, 1.25))``) averages each
proposal's class scores over horizontal flips and rescaled copies of the input before the
per-class NMS, the WSOD convention (WSDDN, OICR): mmdet's ``DetTTAModel`` instead merges boxes
after NMS, which suits regressed boxes, not a fixed proposal set whose scores are the output.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from mmdet.models.detectors.base import BaseDetector
from mmdet.registry import MODELS
from mmdet.structures import SampleList
from torch import Tensor

from ..roi_heads.common import nms_detections


@MODELS.register_module()
class WSODWeakDetector(BaseDetector):
    """Weakly supervised detector over precomputed proposals.

    Args:
        backbone: backbone config (e.g. ``WSODMobileNetV2``, ``WSODEfficientNetLite``).
        roi_head: MIL head config (``WSODWSDDNHead`` or ``WSODOICRHead``).
        neck: optional neck config.
        data_preprocessor: usually ``DetDataPreprocessor`` (normalise, pad).
        test_cfg: test-time augmentation, ``flip`` (bool) and ``scales`` (factors applied to the
            test pipeline's input size); proposal class scores are averaged over all
            ``len(scales) x (1 + flip)`` views. ``None``: one view.
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
        seeds = [ds.proposals.get("seed_scores") for ds in batch_data_samples]
        if all(s is None for s in seeds):
            branches = (getattr(self.roi_head, b, None) for b in ("affinity", "instance"))
            if any(b is not None for b in branches):  # seeds leave padding out
                metas = [ds.metainfo for ds in batch_data_samples]
                return self.roi_head.loss(feats, boxes, scores, labels, batch_img_metas=metas)
            return self.roi_head.loss(feats, boxes, scores, labels)
        if any(s is None for s in seeds) or not getattr(self.roi_head, "accepts_seeds", False):
            raise ValueError(
                f"{type(self.roi_head).__name__} got seed scores (the dataset's seed_file) but "
                "cannot use them: seeds supervise OICR's first refinement branch "
                "(WSODOICRHead); drop train_dataloader.dataset.seed_file or use an OICR config"
            )
        seeds = [s.to(boxes[i].device).float() for i, s in enumerate(seeds)]
        return self.roi_head.loss(feats, boxes, scores, labels, seed_scores=seeds)

    def predict(
        self, batch_inputs: Tensor, batch_data_samples: SampleList, rescale: bool = True
    ) -> SampleList:
        """Adds ``pred_instances`` (bboxes x1y1x2y2 in original pixels when ``rescale``,
        scores, 0-based labels) to each sample."""
        boxes, scores, _ = self._unpack(batch_data_samples)
        metas = [ds.metainfo for ds in batch_data_samples]
        flip, scales = self._tta_views()
        if not flip and scales == (1.0,):
            feats = self.extract_feat(batch_inputs)
            results = self.roi_head.predict(
                feats, boxes, scores, metas, rescale=rescale, **self._images(batch_inputs)
            )
        else:
            results = [
                nms_detections(
                    boxes[i],
                    self.tta_class_scores(batch_inputs[i], boxes[i], scores[i], metas[i]),
                    metas[i],
                    rescale,
                    self.roi_head.test_cfg,
                )
                for i in range(len(boxes))
            ]
        return self.add_pred_to_datasample(batch_data_samples, results)

    def _images(self, inputs: Tensor) -> dict:
        """``images=inputs`` for a head that refines its maps on the image (the CAM head's
        ``refine``), else nothing (the other heads take no images)."""
        return {"images": inputs} if getattr(self.roi_head, "refine", None) else {}

    def _tta_views(self) -> tuple[bool, tuple[float, ...]]:
        cfg = self.test_cfg or {}
        scales = tuple(float(s) for s in cfg.get("scales", (1.0,)))
        if not scales or min(scales) <= 0:
            raise ValueError(f"test_cfg.scales must be positive factors, got {scales}")
        return bool(cfg.get("flip", False)), scales

    def tta_class_scores(
        self, image: Tensor, boxes: Tensor, proposal_scores: Tensor, meta: dict
    ) -> Tensor:
        """(R, C) class scores of one image's proposals averaged over the TTA views.

        Args:
            image: (3, H, W) normalised and padded input; its top-left ``meta['img_shape']``
                is the image.
            boxes: (R, 4) x1y1x2y2 in input pixels; ``proposal_scores``: (R,).
        """
        flip, scales = self._tta_views()
        h, w = meta["img_shape"][:2]
        image = image[None, :, :h, :w]
        divisor = getattr(self.data_preprocessor, "pad_size_divisor", 1) or 1
        total, views = 0.0, 0
        for s in scales:
            x = image
            if s != 1.0:  # bilinear resize commutes with the per-channel normalisation
                x = F.interpolate(image, scale_factor=s, mode="bilinear", align_corners=False)
            sh, sw = x.shape[-2:]
            b = boxes * boxes.new_tensor([sw / w, sh / h, sw / w, sh / h])
            view_meta = dict(meta, img_shape=(sh, sw))
            for flipped in (False, True) if flip else (False,):
                xv, bv = x, b
                if flipped:
                    xv = x.flip(-1)
                    bv = torch.stack([sw - b[:, 2], b[:, 1], sw - b[:, 0], b[:, 3]], dim=1)
                pad_h, pad_w = -sh % divisor, -sw % divisor
                xv = F.pad(xv, (0, pad_w, 0, pad_h))  # the preprocessor's pad value, 0
                feats = self.extract_feat(xv)
                view = self.roi_head.proposal_class_scores(
                    feats, [bv], [proposal_scores], [view_meta], **self._images(xv)
                )
                total = total + view[0]
                views += 1
        return total / views

    def _forward(self, batch_inputs: Tensor, batch_data_samples: SampleList | None = None):
        feats = self.extract_feat(batch_inputs)
        boxes, scores, _ = self._unpack(batch_data_samples)
        return self.roi_head.proposal_class_scores(feats, boxes, scores)
