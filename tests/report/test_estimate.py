"""The run-time estimate (:mod:`wsod.report.estimate`): the step timer's records in a real
stage's sidecars (the strong stage on 3 real VOC images), the arithmetic that scales them to a
real run, phases of a two-phase schedule, and the prediction beside what a run took."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wsod.report import estimate as est
from wsod.report.cost import collect
from wsod.utils.io import write_json_artifact

REPO = Path(__file__).resolve().parents[2]
DEMO_CONFIG = (
    REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py"
)
FAST = {
    "model.backbone.init_cfg": None,
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
    "test_dataloader.persistent_workers": False,
    "train_dataloader.dataset.pipeline.2.scale": (224, 224),
    "test_dataloader.dataset.pipeline.1.scale": (224, 224),
}


@pytest.mark.slow
def test_a_real_stage_records_its_steps_and_the_estimate_scales_them(
    voc_root, tmp_path, one_torch_thread, monkeypatch
):
    from wsod.stages import data as data_stage
    from wsod.stages.strong import run as strong
    from wsod.utils import io as wio

    monkeypatch.setattr(wio, "_NOTED", {})  # nothing noted by an earlier test of this process
    run = tmp_path / "run_quick"
    data_stage.run(voc_root, run / "data", format="voc", splits=["train"], limit=3)
    split, real = run / "data" / "train.json", run / "data" / "train_gt.json"
    out = run / "strong" / "val_dets.json"  # the 3 images stand for val here
    strong(DEMO_CONFIG, None, run / "strong", fully_supervised_gt=real, cfg_options=FAST,
           max_iters=3, precision="fp32", infer=[(split, out)])  # fmt: skip

    model_meta = json.loads((run / "strong" / "fsd_strong_model.json.meta.json").read_text())
    steps = model_meta["train_steps"]
    assert steps["steps"] == 3 and len(steps["seconds"]) == 3 and steps["total_s"] > 0
    assert model_meta["precision"]["precision"] == "fp32"
    assert model_meta["cpu"]["cores"] >= 1 and model_meta["cpu"]["summary"]
    det_meta = json.loads((run / "strong" / "val_dets.json.meta.json").read_text())
    assert det_meta["test_steps"]["units"] == 3

    trainings = {"strong/fsd_strong_model.json": {"iters": 30, "phase_start": None}}
    small = est.predict(run, {"train": 30, "val": 30}, trainings)
    assert small["quick_images"] == {"train": 3, "val": 3}
    proc = next(p for p in small["processes"] if "strong/val_dets.json" in p["artifacts"])
    per_image = det_meta["test_steps"]["total_s"] / 3
    expected = proc["startup_s"] + 30 * steps["median_s"] + 30 * per_image
    assert proc["predicted_s"] == pytest.approx(expected, abs=0.2)
    strong_rows = [r for r in est.read_rows(run) if r["stage"] == "strong"]
    span = est.process_seconds(strong_rows)  # first start to last end of the stage's files
    assert span >= model_meta["wall_time_s"]
    assert proc["startup_s"] == pytest.approx(span - steps["total_s"] - 3 * per_image, abs=0.2)
    longer = est.predict(run, {"train": 30, "val": 30},
                         {k: {"iters": 60, "phase_start": None} for k in trainings})  # fmt: skip
    assert longer["total_s"] - small["total_s"] == pytest.approx(30 * steps["median_s"], abs=0.2)
    assert "whole run" in est.format_estimate(small) and small["cpu"] in est.format_estimate(small)


def _sidecar(path: Path, stage: str, command: str, wall: float, **extra) -> None:
    meta_extra = {"command": command.split(), **extra}
    write_json_artifact(path, {}, stage=stage, started=None, extra=meta_extra)
    meta = json.loads(Path(f"{path}.meta.json").read_text())
    meta["wall_time_s"] = wall
    Path(f"{path}.meta.json").write_text(json.dumps(meta))


def _quick_run(root: Path) -> Path:
    """Sidecars of a quick look (synthetic, in addition to the real stage above): a two-phase
    black box (4 + 2 iterations), its detections of 4 train and 4 val images, proposals."""
    (root / "weak").mkdir(parents=True)
    (root / "proposals").mkdir()
    hooks = [{"type": "WSODAffinityPhaseHook", "start_iter": 4}]
    train = {"steps": 6, "total_s": 8.0, "median_s": 1.0, "seconds": [1, 1, 1, 1, 2, 2]}
    _sidecar(root / "weak" / "weak_model.json", "weak", "wsod weak --train", 18.0,
             train_steps=train, config={"custom_hooks": hooks})  # fmt: skip
    for split, total in (("train", 2.0), ("val", 1.0)):
        test = {"steps": 4, "total_s": total, "median_s": total / 4, "units": 4}
        _sidecar(root / "weak" / f"{split}_dets.json", "weak", f"wsod weak --infer {split}", total + 5,
                 test_steps=test)  # fmt: skip
    _sidecar(root / "proposals" / "train.pkl", "proposals", "wsod proposals train", 6.0)
    (root / "denoise").mkdir()
    _sidecar(root / "denoise" / "pseudo_train.json", "denoise", "wsod denoise", 1.5)
    return root


def test_phases_startup_and_images_scale_separately(tmp_path):
    quick = _quick_run(tmp_path / "quick")
    trainings = {"weak/weak_model.json": {"iters": 100, "phase_start": 80}}
    got = est.predict(quick, {"train": 40, "val": 20}, trainings)
    by_artifact = {p["artifacts"][0]: p for p in got["processes"]}
    model = by_artifact["weak/weak_model.json"]
    assert model["startup_s"] == 10.0  # 18 s wall - 8 s of steps
    assert model["predicted_s"] == 10.0 + 80 * 1 + 20 * 2
    assert by_artifact["weak/train_dets.json"]["predicted_s"] == 5.0 + 40 * 0.5
    assert by_artifact["weak/val_dets.json"]["predicted_s"] == 5.0 + 20 * 0.25
    assert by_artifact["proposals/train.pkl"]["predicted_s"] == 6.0 * 40 / 4
    assert by_artifact["denoise/pseudo_train.json"]["predicted_s"] == 1.5  # start-up, as it was
    # the synthetic stages all end in the same second: no time between them
    assert got["between_s"] == 0.0
    assert got["total_s"] == pytest.approx(sum(p["predicted_s"] for p in got["processes"]))


def test_phase_rates():
    assert est.phase_rates([1, 1, 1, 3, 3], 3) == [1, 3]
    assert est.phase_rates([1, 2, 3], None) == [2]
    assert est.phase_rates([2, 2], 5) == [2, 2]  # the quick look never reached the phase


def test_the_prediction_beside_what_the_run_took(tmp_path):
    quick = _quick_run(tmp_path / "quick")
    trainings = {"weak/weak_model.json": {"iters": 100, "phase_start": 80}}
    prediction = est.predict(quick, {"train": 40, "val": 20}, trainings)
    real = _quick_run(tmp_path / "real")  # stands for the real run: its sidecars' wall times
    rows = est.compare(prediction, est.read_rows(real))
    assert [r["stage"] for r in rows][:4] == ["denoise", "proposals", "weak", "whole run"]
    assert rows[4]["predicted_s"] == prediction["two_jobs_s"]
    weak = rows[2]
    assert weak["predicted_s"] == pytest.approx(130 + 25 + 10)
    assert weak["actual_s"] is not None and weak["ratio"] == round(weak["actual_s"] / 165, 2)
    assert rows[3]["predicted_s"] == prediction["total_s"]
    assert rows[3]["actual_s"] == rows[4]["actual_s"] == collect(real)["merged_wall_time_s"]
    assert weak["actual_s"] == 18.0 + 7.0 + 6.0  # three weak processes, each its own time


def test_two_jobs_take_the_longer_of_the_chain_and_the_shared_work():
    def proc(artifact, seconds):
        return {"artifacts": [artifact], "predicted_s": seconds}

    chain = [proc("data/train.json", 10), proc("weak/weak_model.json", 100),
             proc("weak/train_dets.json", 20), proc("denoise/pseudo_train.json", 1),
             proc("strong/strong_model.json", 50), proc("eval/metrics.json", 5)]  # fmt: skip
    # proposals shorter than the black box's training: the training is on the chain
    short = [*chain, proc("proposals/train.pkl", 30)]
    assert est.two_jobs_seconds(short, throughput=1.5) == 186  # chain > 216 / 1.5
    # a long reference beside it: the shared work decides
    wide = [*short, proc("fsd/fsd_strong_model.json", 200)]
    assert est.two_jobs_seconds(wide, throughput=1.5) == pytest.approx(416 / 1.5, abs=0.1)
    longer = [*chain, proc("proposals/train.pkl", 150)]  # proposals longer than the training
    assert est.two_jobs_seconds(longer, throughput=10) == 236
