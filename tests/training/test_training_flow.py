"""The shared training flow (``wsod.training.flow``) on a toy mmengine model: train, resume an
interrupted run, skip a finished one, and move another run's checkpoints to ``stale/``.

The toy model (one linear layer on 2-d inputs) keeps each run to a second; the stages run the
same functions with real detectors (tests/stages/test_{weak,strong}_stage.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.model import BaseModel
from mmengine.registry import DATASETS, MODELS

from wsod import training as tr
from wsod.training import flow


@MODELS.register_module(name="WSODTestToyModel", force=True)
class ToyModel(BaseModel):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    def forward(self, inputs, data_samples=None, mode="tensor"):
        out = self.fc(torch.stack(inputs))
        return {"loss": (out**2).mean()} if mode == "loss" else out


@DATASETS.register_module(name="WSODTestToyDataset", force=True)
class ToyDataset(torch.utils.data.Dataset):
    def __init__(self, n: int = 4, ann_file: str | None = None) -> None:
        self.x = torch.linspace(-1, 1, 2 * n).reshape(n, 2)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"inputs": self.x[i]}


class FlowError(ValueError):
    pass


def toy_cfg(work: Path, max_iters: int = 2, lr: float = 0.1, ann_file=None) -> Config:
    return Config(
        dict(
            model=dict(type="WSODTestToyModel"),
            train_dataloader=dict(
                dataset=dict(type="WSODTestToyDataset", ann_file=ann_file and str(ann_file)),
                sampler=dict(type="DefaultSampler", shuffle=False),
                batch_size=2,
                num_workers=0,
            ),
            train_cfg=dict(type="IterBasedTrainLoop", max_iters=max_iters),
            optim_wrapper=dict(optimizer=dict(type="SGD", lr=lr)),
            default_hooks=dict(
                checkpoint=dict(type="CheckpointHook", interval=1, by_epoch=False),
                logger=dict(type="LoggerHook", interval=1),
            ),
            log_processor=dict(by_epoch=False),
            work_dir=str(work),
            randomness=dict(seed=0),
            launcher="none",
        )
    )


def job_of(cfg: Config, work: Path, data: Path, written: list) -> tr.TrainJob:
    return tr.TrainJob(
        stage="toy",
        cfg=cfg,
        config="toy.py",
        work_dir=work,
        run_file=work / "toy_run.json",
        config_file=work / "toy_config.py",
        model_file=work / "toy_model.json",
        inputs=[data],
        meta={"stage": "toy", "seed": 0},
        record={"kind": "toy"},
        model_record={"classes": ["a"]},
        name="toy_train",
        write_inputs=lambda: written.append("write"),
        read_inputs=lambda: written.append("read"),
    )


def train_toy(work: Path, data: Path, *, resume: bool = True, **cfg_kw) -> tuple[tr.Trained, list]:
    cfg = toy_cfg(work, **cfg_kw)
    written: list = []
    fingerprint = tr.Fingerprint(tr.run_fingerprint(cfg, [data]))
    trained = tr.train_or_resume(
        job_of(cfg, work, data, written), fingerprint, resume=resume, error=FlowError
    )
    return trained, written


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("WSOD_JOBS_DIR", raising=False)  # no CPU-share hook (mmdet registry)
    path = tmp_path / "train.json"
    path.write_text("[1, 2, 3]")
    return path


def test_trains_and_writes_the_run_records(tmp_path, data):
    work = tmp_path / "work"
    trained, written = train_toy(work, data)
    assert trained.iterations == 2 and trained.resumed_from is None
    assert Path(trained.checkpoint) == work / "iter_2.pth" and (work / "iter_1.pth").is_file()
    assert written == ["write", "read"]  # rank 0 writes the dataset's files, every rank reads
    run = json.loads((work / "toy_run.json").read_text())
    assert run == {"fingerprint": run["fingerprint"], "kind": "toy", "config": "toy.py"}
    assert run["fingerprint"].startswith("v5:")
    model = json.loads((work / "toy_model.json").read_text())
    assert model["checkpoint"] == trained.checkpoint and model["iterations"] == 2
    assert model["classes"] == ["a"] and model["config"] == str(work / "toy_config.py")
    assert "max_iters=2" in (work / "toy_config.py").read_text()
    assert str(data) in json.loads((work / "toy_model.json.meta.json").read_text())["inputs_sha256"]


def test_finished_run_is_not_trained_again(tmp_path, data, monkeypatch):
    work = tmp_path / "work"
    first, _ = train_toy(work, data)
    # a finished run goes straight to detection: building a Runner here would be a bug
    monkeypatch.setattr(flow, "train", lambda *a, **k: pytest.fail("trained a finished run"))
    again, _ = train_toy(work, data)
    assert again.resumed_from == first.checkpoint and again.iterations == 2
    assert again.checkpoint == first.checkpoint
    assert json.loads((work / "toy_model.json").read_text())["resumed_from"] == first.checkpoint
    assert not (work / "stale").exists()


def test_interrupted_run_resumes_from_its_last_checkpoint(tmp_path, data):
    work = tmp_path / "work"
    train_toy(work, data)
    (work / "iter_2.pth").unlink()  # interrupted after step 1
    (work / "last_checkpoint").write_text(str(work / "iter_1.pth"))
    resumed, _ = train_toy(work, data)
    assert Path(resumed.resumed_from).name == "iter_1.pth"
    assert resumed.iterations == 2 and Path(resumed.checkpoint).name == "iter_2.pth"
    logs = "".join(p.read_text() for p in work.glob("*/*.log"))
    assert "resumed" in logs.lower()
    # without resume the same run starts over (and moves nothing)
    fresh, _ = train_toy(work, data, resume=False)
    assert fresh.resumed_from is None and fresh.iterations == 2
    assert not (work / "stale").exists()


def test_another_runs_checkpoints_move_to_stale(tmp_path, data):
    work = tmp_path / "work"
    train_toy(work, data)
    old_run = json.loads((work / "toy_run.json").read_text())
    # another run in the same work dir (here another learning rate): nothing resumed, nothing lost
    other, _ = train_toy(work, data, max_iters=1, lr=0.01)
    assert other.resumed_from is None and other.iterations == 1
    (stale,) = (work / "stale").iterdir()
    assert {p.name for p in stale.iterdir()} == {
        "iter_1.pth",
        "iter_2.pth",
        "last_checkpoint",
        "toy_run.json",
    }
    assert json.loads((stale / "toy_run.json").read_text()) == old_run
    assert sorted(p.name for p in work.glob("iter_*.pth")) == ["iter_1.pth"]
    # changed training inputs are another run too
    data.write_text("[4]")
    train_toy(work, data, max_iters=1, lr=0.01)
    assert len(list((work / "stale").iterdir())) == 2  # a folder per move, even in one second
    assert json.loads((work / "toy_run.json").read_text())["fingerprint"] != old_run["fingerprint"]


def test_training_without_a_checkpoint_is_an_error(tmp_path, data):
    work = tmp_path / "work"
    cfg = toy_cfg(work)
    cfg.default_hooks.checkpoint.interval = 100  # never saves before the end ...
    cfg.default_hooks.checkpoint.save_last = False  # ... nor at the end
    job = job_of(cfg, work, data, [])
    with pytest.raises(FlowError, match="without a checkpoint"):
        tr.train_or_resume(job, tr.Fingerprint("f"), resume=True, error=FlowError)


def test_num_classes_set_everywhere_but_the_rpn():
    model = {
        "roi_head": {"num_classes": 20, "bbox_head": {"num_classes": 20}},
        "rpn_head": {"num_classes": 1},
        "heads": [{"num_classes": 3}],
    }
    tr.set_num_classes(model, 5)
    assert model["roi_head"] == {"num_classes": 5, "bbox_head": {"num_classes": 5}}
    assert model["rpn_head"] == {"num_classes": 1} and model["heads"] == [{"num_classes": 5}]


def test_a_moved_run_folder_is_the_same_run(tmp_path, data, monkeypatch):
    """A run folder (work dir + training inputs) moved elsewhere resumes there: a finished run
    is not trained again, an interrupted one continues from the moved folder's checkpoint
    (mmengine's ``last_checkpoint`` still names the old place)."""
    import shutil

    run = tmp_path / "run"
    work, inputs = run / "work", run / "train.json"
    inputs.parent.mkdir()
    shutil.copy(data, inputs)
    train_toy(work, inputs, ann_file=inputs)
    moved = tmp_path / "elsewhere" / "run"
    shutil.move(run, moved)
    (moved / "work" / "iter_2.pth").unlink()  # interrupted after step 1, then moved
    (moved / "work" / "last_checkpoint").write_text(str(work / "iter_1.pth"))
    resumed, _ = train_toy(moved / "work", moved / "train.json", ann_file=moved / "train.json")
    assert resumed.resumed_from == str(moved / "work" / "iter_1.pth")
    assert resumed.checkpoint == str(moved / "work" / "iter_2.pth")
    assert not (moved / "work" / "stale").exists()
    # copied once more, finished: detection only, nothing trained
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    monkeypatch.setattr(flow, "train", lambda *a, **k: pytest.fail("trained a finished run"))
    again, _ = train_toy(copy / "work", copy / "train.json", ann_file=copy / "train.json")
    assert again.resumed_from == str(copy / "work" / "iter_2.pth") and again.iterations == 2
    assert not (copy / "work" / "stale").exists()
