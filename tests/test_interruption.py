"""A real interruption of ``make all``, and a pipeline edit that reruns only what follows it.

On 4 real VOC images per split (pipelines/voc07_cpu.py shrunk further than
tests/test_voc_pipeline.py: 4 black-box steps with a checkpoint after each, 2 strong steps, no
reference, no rescoring):

1. an uninterrupted ``make all`` (the reference artifacts);
2. the same ``make all`` in another folder, its whole process group killed (SIGKILL, as a
   crash or a lost machine) once the black box has written its first checkpoint, then rerun:
   the black box resumes from that checkpoint (``weak_model.json``'s ``resumed_from``), the data
   stage is not rerun, and every artifact equals the uninterrupted run's within float tolerance;
3. the uninterrupted run with its ``denoise`` section edited: ``make all`` reruns denoise, strong,
   evaluate and report once each, and nothing before them.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from procs import kill_group
from test_voc_pipeline import MAKE_TIMEOUT_S, NO_WORKERS, REPO, _make_all, make_env

WEAK_STEPS = 4
SMALL = f"""
_base_ = ['{REPO}/pipelines/voc07_cpu.py']
fsd = 0
rescore_by_black_box = 0
data = dict(limit=4)
proposals = dict(max_boxes=50, workers=1)
weak = dict(max_iters={WEAK_STEPS}, cfg_options={{**{NO_WORKERS!r},
            'custom_hooks.1.start_iter': {WEAK_STEPS // 2},
            'default_hooks.checkpoint.interval': 1}})
strong = dict(max_iters=2, cfg_options={{**{NO_WORKERS!r},
                                         'model.test_cfg.rcnn.score_thr': 0.0}})
"""
# the same pipeline with one de-noise setting changed (the image filter's threshold)
EDITED_DENOISE = "dict(type='image_filter', min_score=0.05)"
ARTIFACTS = (
    "data/train.json",
    "data/val.json",
    "weak/train_dets.json",
    "weak/val_dets.json",
    "denoise/pseudo_train.json",
    "strong/val_dets.json",
)


def _kill_after_first_checkpoint(pipeline: Path, run: Path, voc_root: Path) -> int:
    """Start ``make all``; SIGKILL its process group once ``weak/iter_1.pth`` is complete
    (``last_checkpoint`` names it: mmengine writes that after the file). Returns the
    iteration of the last checkpoint at the kill."""
    cmd = ["make", "all", f"PIPELINE={pipeline}", f"RUN={run}", f"DATA_ROOT={voc_root}"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=make_env(run),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    marker = run / "weak" / "last_checkpoint"
    deadline = time.time() + MAKE_TIMEOUT_S
    try:
        while not (marker.is_file() and marker.read_text().strip().endswith(".pth")):
            assert proc.poll() is None, f"make all ended ({proc.returncode}) before a checkpoint"
            assert time.time() < deadline, "no black-box checkpoint in time"
            time.sleep(0.05)
        kill_group(proc)
        proc.wait(timeout=60)
    finally:
        kill_group(proc)
    assert not (run / "weak" / "weak_model.json").exists(), "killed after the training ended"
    return int(re.search(r"iter_(\d+)\.pth", marker.read_text()).group(1))


def _dets(path: Path) -> np.ndarray:
    rows = sorted(
        (d["image_id"], d["category_id"], *d["bbox"], d["score"])
        for d in json.loads(path.read_text())
    )
    return np.array(rows, np.float64).reshape(-1, 7)


def _assert_same_artifacts(a: Path, b: Path) -> None:
    for rel in ARTIFACTS:
        x, y = json.loads((a / rel).read_text()), json.loads((b / rel).read_text())
        if rel.startswith("data/"):
            x["info"].pop("data_root", None), y["info"].pop("data_root", None)
            assert x == y, rel
        elif rel.startswith("denoise/"):
            assert len(x["annotations"]) == len(y["annotations"]) > 0, rel
            bx = np.array([[a["image_id"], a["category_id"], *a["bbox"], a["score"]]
                           for a in x["annotations"]])  # fmt: skip
            by = np.array([[a["image_id"], a["category_id"], *a["bbox"], a["score"]]
                           for a in y["annotations"]])  # fmt: skip
            np.testing.assert_allclose(bx, by, atol=0.05, rtol=1e-3, err_msg=rel)
        else:
            dx, dy = _dets(a / rel), _dets(b / rel)
            assert len(dx) == len(dy) > 0, rel
            np.testing.assert_allclose(dx, dy, atol=0.05, rtol=1e-3, err_msg=rel)
    mx = json.loads((a / "eval/metrics.json").read_text())["detectors"]
    my = json.loads((b / "eval/metrics.json").read_text())["detectors"]
    for name in mx:
        assert my[name]["mAP_11points"] == pytest.approx(mx[name]["mAP_11points"], abs=1e-3)


def _stage_counts(out: str) -> dict[str, int]:
    names = re.findall(r"-m wsod (\w+)", out)
    return {n: names.count(n) for n in sorted(set(names))}


@pytest.mark.slow
@pytest.mark.timeout(4 * MAKE_TIMEOUT_S)
def test_killed_make_all_resumes_and_ends_where_an_uninterrupted_run_ends(tmp_path, voc_root):
    pipeline = tmp_path / "voc07_small.py"
    pipeline.write_text(SMALL)
    whole = tmp_path / "whole"
    _make_all(pipeline, whole, voc_root)
    model = json.loads((whole / "weak/weak_model.json").read_text())
    assert model["iterations"] == WEAK_STEPS and model["resumed_from"] is None

    cut = tmp_path / "cut"
    at = _kill_after_first_checkpoint(pipeline, cut, voc_root)
    assert 1 <= at < WEAK_STEPS
    rerun = _make_all(pipeline, cut, voc_root)
    counts = _stage_counts(rerun)
    assert "data" not in counts, counts  # finished before the kill: not redone
    model = json.loads((cut / "weak/weak_model.json").read_text())
    assert model["iterations"] == WEAK_STEPS
    assert model["resumed_from"] and Path(model["resumed_from"]).name == f"iter_{at}.pth", (
        "the black box restarted instead of resuming from its checkpoint"
    )
    _assert_same_artifacts(whole, cut)

    # one section edited: only the stages after it rerun, once each
    text = (
        SMALL
        + f"denoise = dict(strategies=[dict(type='label_consistency'), dict(type='top1'), {EDITED_DENOISE}])\n"
    )  # noqa: E501
    pipeline.write_text(text)
    edited = _make_all(pipeline, whole, voc_root)
    assert _stage_counts(edited) == {"denoise": 1, "evaluate": 1, "report": 1, "strong": 1}
