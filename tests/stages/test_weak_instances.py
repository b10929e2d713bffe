"""The instance-separating CAM black box on real VOC images through ``wsod.stages.weak.run``
(configs/cam/cam_efficientnet-lite0_4k-instances_voc07-train_voc07-val.py): step 1 trains the
classifier, step 2 the affinity and instance branches alone (finite losses, nothing else
moves); detection with ``instances`` (the field's masks) and ``components`` (connected
components) adds mask boxes to the proposals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from proposal_grid import grid_proposals

from wsod import contracts

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs/cam/cam_efficientnet-lite0_4k-instances_voc07-train_voc07-val.py"
FAST = {
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
    "default_hooks.logger.interval": 1,
    "default_hooks.checkpoint.interval": 1,
    "custom_hooks.1.start_iter": 1,
}
LOSSES = ("loss_affinity", "loss_displacement", "loss_boundary")


@pytest.fixture(scope="module")
def voc_inputs(voc_root, tmp_path_factory) -> tuple[Path, Path, dict]:
    """3 real VOC train images (image labels only) and grid proposals for them."""
    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run

    out = tmp_path_factory.mktemp("weak_instances") / "data"
    run(voc_root, out, format="voc", splits=("train",), limit=3)
    split = json.loads((out / "train.json").read_text())
    props = {
        im["file_name"]: grid_proposals(im["width"], im["height"], (0.4, 0.6, 0.9))
        for im in split["images"]
    }
    pkl = out / "train_props.pkl"
    save_proposals(pkl, props, stage="test")
    return out / "train.json", pkl, split


def logged_losses(work: Path) -> dict[str, list[float]]:
    """Every value of each phase loss in the run's text log."""
    text = "".join(p.read_text() for p in work.glob("*/*.log"))
    return {k: [float(v) for v in re.findall(rf"{k}: (\S+)", text)] for k in LOSSES}


def mask_boxes_found(dets: list[dict], props: dict, split: dict) -> int:
    """Detections whose box is not one of the image's proposals (a mask box)."""
    names = {im["id"]: im["file_name"] for im in split["images"]}
    found = 0
    for d in dets:
        x, y, w, h = d["bbox"]
        b = torch.tensor(props[names[d["image_id"]]]["bboxes"])
        here = torch.tensor([x, y, x + w, y + h])
        found += not bool(((b - here).abs().max(dim=1).values < 0.05).any())
    return found


@pytest.mark.slow
def test_instances_black_box_trains_its_branches_and_boxes_masks(voc_inputs, tmp_path):
    from wsod.proposals.store import load_proposals
    from wsod.stages.weak import run

    split_path, pkl, split = voc_inputs
    work, out = tmp_path / "ins", tmp_path / "dets.json"
    run(CONFIG, work, train_split=split_path, cfg_options=FAST, max_iters=2,
        infer=[(split_path, pkl, out)])  # fmt: skip
    first, second = (
        torch.load(work / f"iter_{i}.pth", map_location="cpu", weights_only=False)["state_dict"]
        for i in (1, 2)
    )
    assert (
        int(first["roi_head.instance_steps"]) == 0 and int(second["roi_head.instance_steps"]) == 1
    )
    moved = {k for k in first if not torch.equal(first[k], second[k])}
    assert any(k.startswith("roi_head.instance.") for k in moved)
    assert all(k.startswith(("roi_head.affinity", "roi_head.instance")) for k in moved)
    losses = logged_losses(work)
    assert all(len(v) == 1 and torch.isfinite(torch.tensor(v)).all() for v in losses.values())
    props = load_proposals(pkl)
    dets = contracts.load_detections(out, split)
    assert dets and all(d["bbox"][2] > 0 and d["bbox"][3] > 0 for d in dets)
    assert mask_boxes_found(dets, props, split) > 0  # instance boxes, not only proposals
    # the same checkpoint boxing connected components instead (a test-time setting: no
    # retraining)
    comp = tmp_path / "components.json"
    again = run(CONFIG, work, train_split=split_path, max_iters=2, infer=[(split_path, pkl, comp)],
                cfg_options={**FAST, "model.roi_head.scoring.type": "components"})  # fmt: skip
    assert not (work / "stale").exists() and Path(again["checkpoint"]).name == "iter_2.pth"
    cdets = contracts.load_detections(comp, split)
    assert cdets and mask_boxes_found(cdets, props, split) > 0
