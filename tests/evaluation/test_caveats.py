"""The data caveats of metrics.json come from the gt file (wsod.evaluation.caveats)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from wsod.evaluation.caveats import (
    DEMO,
    KNOWN_DATASETS,
    SHARED_VOC2007,
    VOC,
    caveats_for,
    dataset_identity,
)


@pytest.fixture(scope="module")
def shared_gt(voc_root: Path, tmp_path_factory) -> dict:
    """A real gt file of the shared VOC copy, written by the data stage."""
    from wsod.stages.data import run as data_run

    out = tmp_path_factory.mktemp("caveats")
    data_run(voc_root, out, format="voc", splits=("val",), limit=5)
    return json.loads((out / "val_gt.json").read_text())


def test_shared_voc_copy_is_recognised_from_its_file(shared_gt: dict):
    assert shared_gt["info"]["format"] == "voc"
    assert not any(a.get("difficult") for a in shared_gt["annotations"])  # the copy's defect
    assert dataset_identity(shared_gt) == SHARED_VOC2007
    caveats = caveats_for(shared_gt)
    assert caveats == list(KNOWN_DATASETS[SHARED_VOC2007])
    assert any("not the official VOC2007 test set" in c for c in caveats)


def test_voc_with_difficult_flags_is_not_the_shared_copy(shared_gt: dict):
    gt = copy.deepcopy(shared_gt)
    gt["annotations"][0]["difficult"] = 1
    assert dataset_identity(gt) == VOC
    assert caveats_for(gt) == list(KNOWN_DATASETS[VOC])
    assert not any("lost the 'difficult' flags" in c for c in caveats_for(gt))


def test_the_gt_file_can_say_it_itself(shared_gt: dict):
    gt = copy.deepcopy(shared_gt)
    gt["info"]["caveats"] = ["Boxes drawn by one annotator."]
    assert caveats_for(gt) == ["Boxes drawn by one annotator."]
    gt = copy.deepcopy(shared_gt)
    gt["info"]["dataset"] = DEMO
    assert dataset_identity(gt) == DEMO and caveats_for(gt) == list(KNOWN_DATASETS[DEMO])


def test_demo_and_custom_data(shared_gt: dict):
    demo = copy.deepcopy(shared_gt)
    demo["info"]["format"] = "demo"
    assert caveats_for(demo) == list(KNOWN_DATASETS[DEMO])
    custom = copy.deepcopy(shared_gt)
    custom["info"].update(format="csv", data_root="/data/shop")
    assert dataset_identity(custom) is None
    (note,) = caveats_for(custom)
    assert note.startswith("Custom csv data from /data/shop:")
