"""Two processes under ``torchrun`` (``--launcher pytorch``, gloo on this CPU) train the demo's
weak and strong configs for 2 iterations, and detect.

What is compared, and why: two processes cannot train the same weights as one process (each
rank draws its own shard of the images, its own augmentation and dropout; the gradients are
averaged over two half batches), so the test compares *detection*, which must not depend on
the number of processes: the same command rerun in one process finds the two-process run's
checkpoints (the run fingerprint ignores the launcher), takes the "already finished" shortcut
and detects with the same final checkpoint. Its detections must equal the ones the two ranks
made together (each rank detects on its shard of the split, rank 0 writes the merged file)
within float tolerance. The two-process run itself must leave one checkpoint that both ranks
report, and valid detections on every image.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from proposal_grid import grid_proposals as _grid

from wsod import contracts
from wsod.utils.io import read_json, write_json

REPO = Path(__file__).resolve().parents[1]
WEAK = REPO / "configs/cam/cam_mobilenetv2_demo.py"  # pipelines/demo.py's weak config
STRONG = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py"
LOADERS = {
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
}
STRONG_FAST = {
    **LOADERS,
    "test_dataloader.persistent_workers": False,
    "model.backbone.init_cfg": None,
    "model.test_cfg.rcnn.score_thr": 0.0,  # every image gets detections
}


def grid_proposals(width: int, height: int) -> dict[str, np.ndarray]:
    return _grid(width, height, (0.3, 0.5, 0.8))


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict[str, Path]:
    """The demo dataset (8 train, 4 val images), val proposals, pseudo labels of train."""
    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run

    tmp = tmp_path_factory.mktemp("dist")
    out = tmp / "data"
    run(tmp / "demo", out, format="demo", splits=("train", "val"), num_images=(8, 4))
    val = read_json(out / "val.json")
    props = {im["file_name"]: grid_proposals(im["width"], im["height"]) for im in val["images"]}
    save_proposals(out / "val.pkl", props, stage="test")
    gt = read_json(out / "train_gt.json")  # tests may read ground truth; the stages do not
    pseudo = {
        "info": {"split_file": str(out / "train.json")},
        "images": gt["images"],
        "categories": gt["categories"],
        # pseudo labels as de-noise writes them: a score, no ground-truth-only field
        "annotations": [
            {**{k: v for k, v in a.items() if k != "difficult"}, "score": 0.9}
            for a in gt["annotations"]
        ],
    }
    write_json(out / "pseudo.json", pseudo)
    return {
        "dir": tmp,
        "train": out / "train.json",
        "val": out / "val.json",
        "val_props": out / "val.pkl",
        "pseudo": out / "pseudo.json",
    }


def cfg_args(options: dict) -> list[str]:
    return ["--cfg-options", *(f"{k}={v}" for k, v in options.items())]


def torchrun(stage_args: list[str]) -> list[dict]:
    """``torchrun --nproc_per_node=2 -m wsod ... --launcher pytorch``; each rank's summary.

    Each rank's stdout goes to its own file (torchrun's ``--redirects 1``): printed to one pipe,
    the two ranks' summary lines can interleave."""
    logs = Path(tempfile.mkdtemp(prefix="torchrun_"))
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        f"--log-dir={logs}",
        "--redirects=1",
        "-m",
        "wsod",
        *stage_args,
        "--launcher",
        "pytorch",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("WSOD_JOBS_DIR", None)
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    ranks_out = "\n".join(f.read_text()[-2000:] for f in sorted(logs.rglob("std*.log")))
    tail = f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}\n{ranks_out}"
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{tail}"
    outs = sorted(logs.rglob("stdout.log"), key=lambda f: int(f.parent.name))
    assert len(outs) == 2, f"{sorted(logs.rglob('*'))}\n{tail}"  # one per rank
    summaries = [
        json.loads(line)
        for f in outs
        for line in f.read_text().splitlines()
        if line.startswith("{")
    ]
    assert len(summaries) == 2, tail  # one summary per rank
    return summaries


def assert_distributed(work: Path) -> None:
    """mmengine's logs of the torchrun call (its training and detection Runners) say
    that they ran distributed (one log per Runner, written by rank 0)."""
    logs = [p.read_text() for p in sorted(work.glob("*/*.log"))]
    assert len(logs) == 2 and all("Distributed training: True" in log for log in logs)


def by_image_and_class(dets: list[dict]) -> dict:
    groups = defaultdict(list)
    for d in dets:
        groups[d["image_id"], d["category_id"]].append([d["score"], *d["bbox"]])
    return {k: np.array(sorted(v, reverse=True)) for k, v in groups.items()}


def assert_same_detections(a_path: Path, b_path: Path, split: dict) -> None:
    a = by_image_and_class(contracts.load_detections(a_path, split))
    b = by_image_and_class(contracts.load_detections(b_path, split))
    assert a and a.keys() == b.keys()
    for key in a:
        assert a[key].shape == b[key].shape, key
        np.testing.assert_allclose(a[key][:, 0], b[key][:, 0], atol=1e-4, err_msg=str(key))
        np.testing.assert_allclose(a[key][:, 1:], b[key][:, 1:], atol=0.05, err_msg=str(key))


@pytest.mark.slow
def test_weak_two_processes_detect_like_one(demo, monkeypatch):
    from wsod.stages.weak import run

    monkeypatch.delenv("WSOD_JOBS_DIR", raising=False)
    work = demo["dir"] / "weak"
    two = work / "val_dets_2proc.json"
    common = [
        "--config",
        str(WEAK),
        "--work-dir",
        str(work),
        "--train-split",
        str(demo["train"]),
        "--max-iters",
        "2",
        *cfg_args(LOADERS),
    ]
    ranks = torchrun(["weak", *common, "--infer", f"{demo['val']}:{demo['val_props']}:{two}"])
    assert_distributed(work)
    assert ranks[0]["checkpoint"] == ranks[1]["checkpoint"] == str(work / "iter_2.pth")
    assert all(r["iterations"] == 2 for r in ranks)
    split = contracts.load_split(demo["val"])
    dets = contracts.load_detections(two, split)
    assert {d["image_id"] for d in dets} == {im["id"] for im in split["images"]}
    assert json.loads((work / "weak_model.json").read_text())["checkpoint"] == str(
        work / "iter_2.pth"
    )

    one = work / "val_dets_1proc.json"
    res = run(
        WEAK,
        work,
        train_split=demo["train"],
        max_iters=2,
        cfg_options=LOADERS,
        infer=[(demo["val"], demo["val_props"], one)],
    )
    assert res["resumed_from"] == res["checkpoint"] == str(work / "iter_2.pth")  # finished
    assert not (work / "stale").exists()
    assert_same_detections(one, two, split)


@pytest.mark.slow
def test_strong_two_processes_detect_like_one(demo, monkeypatch):
    from wsod.stages.strong import run

    monkeypatch.delenv("WSOD_JOBS_DIR", raising=False)
    work = demo["dir"] / "strong"
    two = work / "val_dets_2proc.json"
    args = [
        "strong",
        "--config",
        str(STRONG),
        "--pseudo-labels",
        str(demo["pseudo"]),
        "--work-dir",
        str(work),
        "--max-iters",
        "2",
        *cfg_args(STRONG_FAST),
        "--infer",
        f"{demo['val']}:{two}",
    ]
    ranks = torchrun(args)
    assert_distributed(work)
    assert ranks[0]["checkpoint"] == ranks[1]["checkpoint"] == str(work / "iter_2.pth")
    contracts.load_train_annotations(work / "train_annotations.json")
    split = contracts.load_split(demo["val"])

    one = work / "val_dets_1proc.json"
    res = run(
        STRONG,
        demo["pseudo"],
        work,
        max_iters=2,
        cfg_options=STRONG_FAST,
        infer=[(demo["val"], one)],
    )
    assert res["resumed_from"] == res["checkpoint"] == str(work / "iter_2.pth")  # finished
    assert_same_detections(one, two, split)
    per_image = defaultdict(int)
    for d in contracts.load_detections(two, split):
        per_image[d["image_id"]] += 1
    assert set(per_image) == {im["id"] for im in split["images"]}
