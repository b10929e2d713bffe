"""The ignore-regions config: an ``iscrowd`` pseudo box (the de-noise step ``ignore_regions``)
reaches the RPN's and the R-CNN's assigners as a region that is neither positive nor negative,
on a real VOC image."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.models.test_strong_configs import REPO, _car_image_dataset, _cfg

HERE = Path(__file__).resolve()
pytestmark = pytest.mark.usefixtures("one_torch_thread")

IGNORE = (
    HERE.parents[1] / "configs/faster-rcnn_mobilenetv2_fpn_cpu-4e-ignore_voc07-pseudo_voc07-val.py"
)
CPU_4E = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py"


def test_ignore_regions_reach_the_assigners(voc_root, tmp_path):
    """An iscrowd pseudo annotation (a de-noise ignore region) is loaded as an ignored instance,
    and the ignore config's RPN and R-CNN assigners neither train proposals inside it as
    background nor as objects; the plain config trains them as background."""
    from mmdet.registry import TASK_UTILS
    from mmdet.utils import register_all_modules
    from mmengine.structures import InstanceData

    register_all_modules()
    box, region = [10.0, 20.0, 100.0, 80.0], [300.0, 100.0, 150.0, 150.0]
    annotations = [{"bbox": box, "score": 0.5}, {"bbox": region, "score": 0.5, "iscrowd": 1}]
    sample = _car_image_dataset(_cfg(IGNORE), voc_root, tmp_path, annotations)[0]["data_samples"]
    assert len(sample.gt_instances) == 1 and len(sample.ignored_instances) == 1

    gt = InstanceData(bboxes=torch.tensor([[10.0, 20.0, 110.0, 100.0]]), labels=torch.tensor([6]))
    ignored = InstanceData(bboxes=torch.tensor([[300.0, 100.0, 450.0, 250.0]]))
    priors = torch.tensor(
        [
            [10.0, 20.0, 110.0, 100.0],  # on the pseudo box
            [320.0, 120.0, 420.0, 220.0],  # inside the ignore region
            [150.0, 250.0, 250.0, 330.0],  # background
        ]
    )
    for stage in ("rpn", "rcnn"):
        for path, expected in ((IGNORE, [1, -1, 0]), (CPU_4E, [1, 0, 0])):
            assigner = TASK_UTILS.build(_cfg(path).model.train_cfg[stage].assigner)
            result = assigner.assign(InstanceData(priors=priors), gt, ignored)
            assert result.gt_inds.tolist() == expected, (stage, path.name)
