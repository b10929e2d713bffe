"""`make all` with pipelines/voc07_cpu.py on a handful of real VOC images, tiny settings.

The pipeline file under test inherits pipelines/voc07_cpu.py (mmengine ``_base_``) and only
shrinks it: 6 images per split, 100 proposals, 2 training iterations per detector, no loader
processes. Every stage, the fully supervised reference, the evaluation and the report run
through the Makefile exactly as in the real run (the first test with ``make -j2``), so the
headline path cannot silently break.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NO_WORKERS = {
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
    "test_dataloader.persistent_workers": False,
}
# the black box's two phases in 2 steps: the classifier at step 1, its affinity branch at step 2
# (weak.affinity_start_iter: the start of the WSODAffinityPhaseHook of the weak config)
TINY = f"""
_base_ = ['{REPO}/pipelines/voc07_cpu.py']
data = dict(limit=6)
proposals = dict(max_boxes=100, workers=1)
weak = dict(max_iters=2, affinity_start_iter=1, cfg_options={NO_WORKERS!r})
strong = dict(max_iters=2, cfg_options={{**{NO_WORKERS!r},
                                         'model.test_cfg.rcnn.score_thr': 0.0}})
"""
# the ignore-region option on top (measured on VOC, not the default): de-noise step, strong
# config with ignore thresholds, the reference on its own config
IGNORE_CFG = (
    "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-ignore_voc07-pseudo_voc07-val.py"
)
PLAIN_CFG = "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py"
IGNORE = f"""
denoise = dict(strategies=[dict(type='top1'), dict(type='image_filter', min_score=0.2),
                           dict(type='ignore_regions', rel_score=0.5, max_overlap=0.3)])
strong = dict(config='{IGNORE_CFG}')
fsd_config = '{PLAIN_CFG}'
"""
# weak, strong and the reference, plus both rescored by the black box's class probabilities
# (rescore_by_black_box = 'image')
ALL_DETECTORS = {"weak", "strong", "fsd", "strong_rescored", "fsd_rescored"}


def _make_all(pipeline: Path, run: Path, voc_root: Path, *, jobs: int = 1) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WSOD_JOBS_DIR": str(run.parent / "jobs")}
    cmd = [
        "make",
        f"-j{jobs}",
        "all",
        f"PIPELINE={pipeline}",
        f"RUN={run}",
        f"DATA_ROOT={voc_root}",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    tail = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{tail}"
    return done.stdout


def test_voc07_cpu_pipeline_end_to_end_on_six_real_images(tmp_path, voc_root):
    pipeline = tmp_path / "voc07_tiny.py"
    pipeline.write_text(TINY)
    run = tmp_path / "run"
    # two jobs at once, as `make -j2 all` on a 2-core machine: the DAG must stay correct
    out = _make_all(pipeline, run, voc_root, jobs=2)

    stages = ("data", "proposals", "weak", "denoise", "strong", "rescore", "evaluate", "report")
    for stage in stages:
        assert f"-m wsod {stage}" in out, stage
    assert "--fully-supervised-gt" in out  # voc07_cpu.py trains the reference (fsd = 1)
    assert "--method whole_image" in out  # rescore_by_black_box = 'image': the CAM classifier

    val = json.loads((run / "data/val.json").read_text())
    assert len(val["images"]) == 6
    assert "annotations" not in val or not val["annotations"]  # weak split: no boxes
    assert len(val["categories"]) == 20

    metrics = json.loads((run / "eval/metrics.json").read_text())
    assert metrics["split"] == "val" and metrics["num_images"] == 6
    assert set(metrics["detectors"]) == ALL_DETECTORS
    assert "weak" in metrics["train"]["detectors"]  # CorLoc on train
    report = (run / "report/report.md").read_text()
    assert "fsd" in report and "strong" in report and "weak" in report
    assert (run / "report/report.html").stat().st_size > 10_000

    # every detector's val detections refer to the 6 val images only
    ids = {im["id"] for im in val["images"]}
    # the CAM black box's class probabilities: one whole-image box per class and image
    probs = json.loads((run / "weak/val_image_scores.json").read_text())
    assert sorted((d["image_id"], d["category_id"]) for d in probs) == sorted(
        (i, c) for i in ids for c in range(1, 21)
    )
    assert all(0 < d["score"] < 1 and d["bbox"][:2] == [0.0, 0.0] for d in probs)
    for name in ("weak", "strong", "fsd"):
        dets = json.loads((run / name / "val_dets.json").read_text())
        assert dets and {d["image_id"] for d in dets} <= ids, name
        # rescored by the black box: a subset of the detections, scores multiplied by <= 1
        # (the black box's scores are probabilities)
        if name != "weak":
            rescored = json.loads((run / "rescore" / f"{name}_val_dets.json").read_text())
            assert len(rescored) <= len(dets)
            best = {(d["image_id"], d["category_id"], tuple(d["bbox"])): d["score"] for d in dets}
            for d in rescored:
                assert d["score"] <= best[(d["image_id"], d["category_id"], tuple(d["bbox"]))]

    # the pipeline's strong config and its reference (same config): background class 0.3
    from mmengine.config import Config

    for resolved in (run / "strong/strong_config.py", run / "fsd/fsd_strong_config.py"):
        loss_cls = Config.fromfile(str(resolved)).model.roi_head.bbox_head.loss_cls
        assert loss_cls.class_weight == [1.0] * 20 + [0.3], resolved

    # the black box trained its affinity branch at step 2 (its detection refuses a branch that
    # never trained, so the val and train detections above walked on this one)
    import torch

    state = torch.load(run / "weak/iter_2.pth", map_location="cpu", weights_only=False)
    assert int(state["state_dict"]["roi_head.affinity_steps"]) == 1

    # every long stage held a CPU slot (wsod/utils/cpu_share.py) and gave it back
    assert (tmp_path / "jobs").is_dir() and not list((tmp_path / "jobs").iterdir())

    # resumable: a second `make all` has nothing left to do
    again = _make_all(pipeline, run, voc_root, jobs=2)
    assert "-m wsod" not in again


def test_ignore_region_option_end_to_end_on_six_real_images(tmp_path, voc_root):
    tiny = tmp_path / "voc07_tiny.py"
    tiny.write_text(TINY)
    pipeline = tmp_path / "voc07_tiny_ignore.py"
    pipeline.write_text(f"_base_ = ['{tiny}']\n{IGNORE}")  # merged: strong keeps max_iters=2
    run = tmp_path / "run"
    out = _make_all(pipeline, run, voc_root)
    assert f"--config {PLAIN_CFG}" in out  # the reference keeps its config (fsd_config)
    assert out.count('"iterations": 2,') == 3  # weak, strong, fsd: still the tiny schedule
    strong_cfg = (run / "strong/strong_config.py").read_text()
    assert strong_cfg.count("ignore_iof_thr=0.5") == 2  # RPN and R-CNN assigners
    pseudo = json.loads((run / "denoise/pseudo_train.json").read_text())
    assert any(a["iscrowd"] == 0 for a in pseudo["annotations"])
    assert all(a["iscrowd"] in (0, 1) for a in pseudo["annotations"])
    metrics = json.loads((run / "eval/metrics.json").read_text())
    assert set(metrics["detectors"]) == ALL_DETECTORS
