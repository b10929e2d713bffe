"""Test-time augmentation of the weak detector: flipped / rescaled views map proposals back."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from mmdet.structures import DetDataSample
from mmdet.utils import register_all_modules
from mmengine.structures import InstanceData

import wsod.models  # noqa: F401  (registers the modules)
from wsod.models.detectors.weak_detector import WSODWeakDetector

H, W, PAD_W = 64, 80, 96  # an 80-px-wide image padded to 96 (divisor 32)
BOXES = torch.tensor(
    [
        [48.0, 16.0, 64.0, 32.0],  # the bright square
        [16.0, 16.0, 32.0, 32.0],  # its mirror image
        [0.0, 0.0, 80.0, 64.0],  # the whole image
        [48.0, 16.0, 56.0, 24.0],  # a quarter of the square
    ]
)


class MeanPool16(nn.Module):
    """Stride-16 average of the first channel: exactly flip-equivariant on 16-px cells."""

    def forward(self, x):
        return (F.avg_pool2d(x[:, :1], 16),)


def _detector(test_cfg=None) -> WSODWeakDetector:
    register_all_modules()  # mmdet's default scope builds the DetDataPreprocessor
    det = WSODWeakDetector(
        backbone=dict(type="WSODMobileNetV2"),
        roi_head=dict(
            type="WSODCAMHead",
            num_classes=1,
            in_channels=1,
            featmap_stride=16,
            upsample=2,
            test_cfg=dict(score_thr=0.0, max_per_img=10),
        ),
        data_preprocessor=dict(type="DetDataPreprocessor", pad_size_divisor=32),
        test_cfg=test_cfg,
    )
    det.backbone = MeanPool16()
    with torch.no_grad():
        det.roi_head.fc_cls.weight.fill_(1.0)
        det.roi_head.fc_cls.bias.zero_()
    return det.eval()


def _image() -> tuple[torch.Tensor, dict]:
    x = torch.zeros(3, H, PAD_W)
    x[:, 16:32, 48:64] = 1.0  # a square on the right half, aligned with the 16-px cells
    x[:, :, W:] = 0.0  # padding (the preprocessor pads with 0)
    meta = dict(img_shape=(H, W), ori_shape=(H, W), scale_factor=(1.0, 1.0), image_labels=[0])
    return x, meta


def _plain_scores(det, x, meta):
    feats = det.extract_feat(x[None])
    return det.roi_head.proposal_class_scores(feats, [BOXES], [torch.zeros(4)], [meta])[0]


def test_flip_view_maps_boxes_back_with_the_image_width_not_the_padded_one():
    x, meta = _image()
    plain = _plain_scores(_detector(), x, meta)
    assert plain[:, 0].argmax() == 0 and plain[1, 0] == 0
    tta = _detector(dict(flip=True)).tta_class_scores(x, BOXES, torch.zeros(4), meta)
    # the backbone is flip-equivariant on this image: averaging with the flip changes nothing
    assert torch.allclose(tta, plain, atol=1e-5)


def test_single_unflipped_view_equals_the_plain_path():
    x, meta = _image()
    det = _detector(dict(flip=False, scales=[1.0]))
    tta = det.tta_class_scores(x, BOXES, torch.zeros(4), meta)
    assert torch.allclose(tta, _plain_scores(det, x, meta))


def test_rescaled_view_scales_the_boxes():
    x, meta = _image()
    plain = _plain_scores(_detector(), x, meta)
    up = _detector(dict(scales=[2.0])).tta_class_scores(x, BOXES, torch.zeros(4), meta)
    assert up[:, 0].argmax() == 0 and up[1, 0] < 0.05  # still the square, not its mirror
    assert torch.allclose(up[0], plain[0], atol=0.1)  # bilinear resize blurs the edges only
    both = _detector(dict(scales=[1.0, 2.0])).tta_class_scores(x, BOXES, torch.zeros(4), meta)
    assert torch.allclose(both, (plain + up) / 2, atol=1e-5)


def test_predict_with_tta_returns_boxes_in_original_pixels():
    x, meta = _image()
    meta = dict(meta, scale_factor=(0.5, 0.5), ori_shape=(2 * H, 2 * W))
    sample = DetDataSample(metainfo=meta)
    sample.proposals = InstanceData(bboxes=BOXES.clone(), scores=torch.zeros(4))
    det = _detector(dict(flip=True, scales=[1.0, 2.0]))
    with torch.no_grad():
        out = det.predict(x[None], [sample])[0].pred_instances
    assert torch.allclose(out.bboxes[0], BOXES[0] * 2)  # the square, mapped to ori pixels
    assert out.scores[0] == out.scores.max() and out.labels[0] == 0


@pytest.mark.parametrize("scales", [[], [0.0], [-1.0, 1.0]])
def test_bad_scales_are_refused(scales):
    x, meta = _image()
    with pytest.raises(ValueError, match="scales"):
        _detector(dict(scales=scales)).tta_class_scores(x, BOXES, torch.zeros(4), meta)


@pytest.mark.parametrize("test_cfg", [None, dict(flip=True, scales=[1.0, 2.0])])
def test_a_refining_head_gets_the_images_on_both_paths(test_cfg, monkeypatch):
    """The detector hands the (view's) input image to a CAM head with ``refine`` (plain path
    and every TTA view); without refine the head gets none."""
    from wsod.models.roi_heads import cam_walks

    seen = []
    refine = cam_walks.refine_cams

    def spy(cam, image, **kw):
        seen.append(tuple(image.shape))
        return refine(cam, image, **kw)

    monkeypatch.setattr(cam_walks, "refine_cams", spy)
    x, meta = _image()
    det = _detector(test_cfg)
    det.roi_head.refine = dict(type="colour", iters=2, dilations=(1, 2))
    sample = DetDataSample(metainfo=meta)
    sample.proposals = InstanceData(bboxes=BOXES.clone(), scores=torch.zeros(4))
    with torch.no_grad():
        out = det.predict(x[None], [sample])[0].pred_instances
    views = 1 if test_cfg is None else 4  # 2 scales x 2 flips
    assert len(seen) == views and seen[0] == (3, H, W)  # the image without its padding
    assert out.labels[0] == 0 and out.bboxes[0].tolist() == BOXES[0].tolist()
    seen.clear()
    det.roi_head.refine = None
    with torch.no_grad():
        det.predict(x[None], [sample])
    assert seen == []
