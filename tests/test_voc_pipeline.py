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
from pathlib import Path

import numpy as np
import pytest
from leak_audit import audited_env, offences, read_log
from procs import run_bounded

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
IGNORE_CFG = "projects/ignore_regions/configs/faster-rcnn_mobilenetv2_fpn_cpu-4e-ignore_voc07-pseudo_voc07-val.py"
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


# a tiny `make all` takes 1-3 min on an idle 2-core machine; the bound leaves room for a busy one
MAKE_TIMEOUT_S = 1200


def make_env(run: Path) -> dict[str, str]:
    """The environment of a test's ``make``: one OpenMP thread, its own CPU-slot folder and
    proposal cache (not the user's shared one), and the run-time leakage guard
    (:mod:`leak_audit`) logging to ``<run>.audit.jsonl``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WSOD_JOBS_DIR": str(run.parent / "jobs")}
    env["PROPOSAL_CACHE"] = str(run.parent / "proposal_cache")
    return audited_env(env, audit_log(run))


def audit_log(run: Path) -> Path:
    return run.parent / f"{run.name}.audit.jsonl"


def _make_all(pipeline: Path, run: Path, voc_root: Path, *, jobs: int = 1) -> str:
    """``make all`` of ``pipeline`` into ``run``; fails the test if it fails, hangs past
    :data:`MAKE_TIMEOUT_S` or a command opened ground truth it may not."""
    cmd = [
        "make",
        f"-j{jobs}",
        "all",
        f"PIPELINE={pipeline}",
        f"RUN={run}",
        f"DATA_ROOT={voc_root}",
    ]
    done = run_bounded(cmd, cwd=REPO, env=make_env(run), timeout=MAKE_TIMEOUT_S)
    tail = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{tail}"
    leaks = offences(read_log(audit_log(run)))
    assert not leaks, "ground truth opened by a command that may not:\n" + "\n".join(leaks)
    return done.stdout


# each detector row of metrics.json and the detections it scored
DETECTION_FILES = {
    "weak": "weak/val_dets.json",
    "strong": "strong/val_dets.json",
    "fsd": "fsd/val_dets.json",
    "strong_rescored": "rescore/strong_val_dets.json",
    "fsd_rescored": "rescore/fsd_val_dets.json",
}


def _eval_map_annotations(gt: dict, images: list[int], cats: list[int]) -> list[dict]:
    """``val_gt.json`` as ``eval_map``'s annotations (difficult boxes as ignored ones)."""
    out = []
    for i in images:
        anns = [a for a in gt["annotations"] if a["image_id"] == i]
        boxes = np.array([[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in anns)])
        boxes = boxes.reshape(-1, 4).astype(np.float32)
        labels = np.array([cats.index(a["category_id"]) for a in anns], np.int64)
        hard = np.array([bool(a.get("difficult")) for a in anns], bool)
        out.append(
            {
                "bboxes": boxes[~hard],
                "labels": labels[~hard],
                "bboxes_ignore": boxes[hard],
                "labels_ignore": labels[hard],
            }
        )
    return out


def _eval_map_results(dets: list[dict], images: list[int], cats: list[int]) -> list[list]:
    """A COCO results list as ``eval_map``'s per-image, per-class (N,5) arrays."""
    out = []
    for i in images:
        mine = [d for d in dets if d["image_id"] == i]
        rows = [
            [[*d["bbox"][:2], d["bbox"][0] + d["bbox"][2], d["bbox"][1] + d["bbox"][3], d["score"]]
             for d in mine if d["category_id"] == c]
            for c in cats
        ]  # fmt: skip
        out.append([np.array(r, np.float32).reshape(-1, 5) for r in rows])
    return out


def check_metrics_against_eval_map(run: Path, names: set[str]) -> dict:
    """The values of ``eval/metrics.json``: each detector's VOC mAP (both modes) and per-class
    GT and detection counts equal mmdet's ``eval_map`` recomputed from the run's own
    detection files and ``val_gt.json``; the ``<name>/weak`` ratios and ``lowered`` follow."""
    from mmdet.evaluation.functional import eval_map

    metrics = json.loads((run / "eval/metrics.json").read_text())
    assert set(metrics["detectors"]) == names
    gt = json.loads((run / "data/val_gt.json").read_text())
    images = sorted(im["id"] for im in gt["images"])
    cats = sorted(c["id"] for c in gt["categories"])
    annotations = _eval_map_annotations(gt, images, cats)
    for name in names:
        entry = metrics["detectors"][name]
        dets = json.loads((run / DETECTION_FILES[name]).read_text())
        assert entry["num_detections"] == len(dets) > 0, name
        results = _eval_map_results(dets, images, cats)
        for mode in ("11points", "area"):
            mean_ap, per_class = eval_map(
                results,
                annotations,
                iou_thr=0.5,
                eval_mode=mode,
                use_legacy_coordinate=False,
                logger="silent",
                nproc=1,
            )
            assert entry[f"mAP_{mode}"] == pytest.approx(mean_ap, abs=1e-4), (name, mode)
            for c, r in zip(cats, per_class, strict=True):
                row = next(v for v in entry["per_class"].values() if v["class_id"] == c)
                assert (row["num_gt"], row["num_dets"]) == (r["num_gts"], r["num_dets"]), name
    weak = metrics["detectors"]["weak"]["mAP_11points"]
    for name in names - {"weak"}:
        ratio = metrics["ratios"][f"{name}/weak"]
        ours = metrics["detectors"][name]["mAP_11points"]
        assert ratio["lowered"] == (ours < weak)
        if weak > 0:
            assert ratio["mAP_11points"] == pytest.approx(ours / weak, rel=1e-3, abs=1e-6)
    return metrics


@pytest.mark.slow
@pytest.mark.timeout(2 * MAKE_TIMEOUT_S + 300)
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

    # the values of metrics.json: recomputed by mmdet's eval_map from the run's detections
    metrics = check_metrics_against_eval_map(run, ALL_DETECTORS)
    assert metrics["split"] == "val" and metrics["num_images"] == 6
    corloc = metrics["train"]["detectors"]["weak"]  # CorLoc on train
    assert 0 <= corloc["corloc"] <= 1 and corloc["n_pairs"] >= 6  # a labelled class per image
    # the report shows those values: weak and strong side by side, with the verdict
    report = (run / "report/report.md").read_text()
    w, s = (metrics["detectors"][n]["mAP_11points"] for n in ("weak", "strong"))
    assert f"strong {s * 100:.1f}" in report and f"weak {w * 100:.1f}" in report
    for name in ALL_DETECTORS:
        assert f"{metrics['detectors'][name]['mAP_11points'] * 100:.1f}" in report, name
    assert (run / "report/report.html").stat().st_size > 10_000

    # the run-time leakage guard was live in make's processes: it saw the allowed readers
    seen = {(r["command"], Path(r["path"]).name, r["write"]) for r in read_log(audit_log(run))}
    # (the data stage writes each gt file atomically: a temporary twin, then a rename)
    assert any(c == "data" and "train_gt.json" in n and w for c, n, w in seen), seen
    assert any(c == "data" and n.endswith(".xml") and not w for c, n, w in seen), seen
    assert ("evaluate", "val_gt.json", False) in seen
    assert ("strong", "train_gt.json", False) in seen  # the labelled reference (fsd)
    assert {c for c, _, _ in seen} <= {"data", "evaluate", "report", "strong"}

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


@pytest.mark.slow
@pytest.mark.timeout(MAKE_TIMEOUT_S + 300)
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
    check_metrics_against_eval_map(run, ALL_DETECTORS)
