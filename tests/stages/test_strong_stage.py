"""The strong stage end to end on 3 real VOC images: train (2 iterations), resume, detect,
fully supervised reference, non-finite loss, and the CLI.

The pseudo labels are the images' real boxes (read by the test through the data stage's
eval-only file: tests may read ground truth, the stage itself never does) with a score.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_runs import tiny_strong_options

from wsod import contracts
from wsod.stages import data as data_stage
from wsod.utils.io import read_json, write_json

REPO = Path(__file__).resolve().parents[2]
DEMO_CONFIG = (
    REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py"
)
# tiny and quick (tests/tiny_runs.py), inputs at most 224 px
FAST = tiny_strong_options(
    "train_dataloader.dataset.pipeline.2.scale", "test_dataloader.dataset.pipeline.1.scale", 224
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def voc3(voc_root, tmp_path_factory):
    """train.json (3 real VOC train images), its real boxes, and pseudo labels made of them."""
    out = tmp_path_factory.mktemp("strong_data")
    data_stage.run(voc_root, out, format="voc", splits=["train"], limit=3)
    real = read_json(out / "train_gt.json")
    assert len(real["images"]) == 3 and len(real["annotations"]) >= 3
    pseudo = {
        "info": {"data_root": str(voc_root), "split_file": str(out / "train.json")},
        "images": real["images"],
        "categories": real["categories"],
        "annotations": [
            {
                "id": a["id"],
                "image_id": a["image_id"],
                "category_id": a["category_id"],
                "bbox": a["bbox"],
                "score": 0.9,
            }
            for a in real["annotations"]
        ],
    }
    write_json(out / "pseudo_train.json", pseudo)
    return {
        "dir": out,
        "split": out / "train.json",
        "real": out / "train_gt.json",
        "pseudo": out / "pseudo_train.json",
    }


@pytest.mark.slow
def test_train_resume_and_detect(voc3, tmp_path):
    from wsod.stages.strong import run

    work = tmp_path / "strong"
    first = run(DEMO_CONFIG, voc3["pseudo"], work, cfg_options=FAST, max_iters=2)
    assert first["iterations"] == 2 and first["resumed_from"] is None
    assert (work / "iter_1.pth").is_file() and first["outputs"] == []

    # interrupted after 1 of 2 iterations (same config): the rerun continues from iter_1.pth
    (work / "iter_2.pth").unlink()
    (work / "last_checkpoint").write_text(str(work / "iter_1.pth"))
    out = tmp_path / "train_dets.json"
    res = run(
        DEMO_CONFIG,
        voc3["pseudo"],
        work,
        cfg_options=FAST,
        max_iters=2,
        infer=[(voc3["split"], out), (voc3["split"], None)],
    )
    assert res["resumed_from"].endswith("iter_1.pth")
    assert res["iterations"] == 2 and res["checkpoint"].endswith("iter_2.pth")
    assert res["supervision"] == "pseudo labels"
    assert res["outputs"] == [str(out), str(work / "train_dets.json")]

    split = contracts.load_split(voc3["split"])
    dets = contracts.load_detections(out, split)
    assert read_json(work / "train_dets.json") == dets
    assert all(1 <= d["category_id"] <= 20 for d in dets)
    # score_thr 0: each image gets its rcnn.max_per_img (100) best boxes, none is left out
    per_image = {im["id"]: 0 for im in split["images"]}
    for d in dets:
        per_image[d["image_id"]] += 1
    assert set(per_image.values()) == {100}, per_image
    meta = read_json(f"{out}.meta.json")
    assert meta["stage"] == "strong" and meta["supervision"] == "pseudo labels"
    assert meta["fully_supervised"] is False

    # the resolved config is saved, with the pseudo labels' classes and data root filled in
    resolved = (work / "strong_config.py").read_text()
    assert "train_annotations.json" in resolved and "'aeroplane'" in resolved
    model = read_json(work / "strong_model.json")
    assert model["iterations"] == 2 and len(model["classes"]) == 20
    ann = read_json(work / "train_annotations.json")
    assert len(ann["annotations"]) == len(read_json(voc3["pseudo"])["annotations"])
    assert all(a["area"] > 0 and a["weight"] == 0.9 for a in ann["annotations"])

    # a third run on the finished work dir resumes at the end: no training, same checkpoint
    again = run(DEMO_CONFIG, voc3["pseudo"], work, cfg_options=FAST, max_iters=2)
    assert again["iterations"] == 2 and again["resumed_from"].endswith("iter_2.pth")

    # the same work dir with other training boxes is not resumed: the old run's checkpoints
    # move to stale/ (nothing lost) and training starts over
    other = read_json(voc3["pseudo"])
    other["annotations"] = other["annotations"][:1]
    write_json(tmp_path / "other.json", other)
    fresh = run(DEMO_CONFIG, tmp_path / "other.json", work, cfg_options=FAST, max_iters=1)
    assert fresh["resumed_from"] is None and fresh["iterations"] == 1
    (stale,) = (work / "stale").iterdir()
    assert {"iter_2.pth", "strong_run.json"} <= {p.name for p in stale.iterdir()}
    assert (
        read_json(work / "strong_run.json")["train_sha256"]
        != read_json(stale / "strong_run.json")["train_sha256"]
    )


@pytest.mark.slow
def test_fully_supervised_reference_is_labelled(voc3, tmp_path):
    from wsod.stages.strong import run

    work = tmp_path / "fsd"
    res = run(
        DEMO_CONFIG,
        None,
        work,
        fully_supervised_gt=voc3["real"],
        cfg_options=FAST,
        max_iters=1,
        infer=[(voc3["split"], None)],
    )
    assert res["outputs"] == [str(work / "fsd_train_dets.json")]
    assert "ground-truth boxes" in res["supervision"]
    meta = read_json(work / "fsd_train_dets.json.meta.json")
    assert meta["fully_supervised"] is True and "ground-truth" in meta["supervision"]
    assert (work / "fsd_strong_config.py").is_file() and (work / "fsd_strong_model.json").is_file()
    contracts.load_detections(work / "fsd_train_dets.json", contracts.load_split(voc3["split"]))


@pytest.mark.slow
def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(voc3, tmp_path, monkeypatch):
    from mmdet.models.detectors.two_stage import TwoStageDetector

    from wsod.models.strong import NonFiniteLossError
    from wsod.stages.strong import run

    original = TwoStageDetector.loss
    calls = {"n": 0}

    def loss_nan_from_second_call(self, *args, **kwargs):
        losses = original(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] >= 2:
            losses["loss_cls"] = losses["loss_cls"] * float("nan")
        return losses

    monkeypatch.setattr(TwoStageDetector, "loss", loss_nan_from_second_call)
    work = tmp_path / "nan"
    with pytest.raises(NonFiniteLossError) as err:
        run(DEMO_CONFIG, voc3["pseudo"], work, cfg_options=FAST, max_iters=3)
    msg = str(err.value)
    assert "iteration 2" in msg and "loss_cls=nan" in msg and "loss_bbox=" in msg
    assert "iter_1.pth" in msg and "lower the learning rate" in msg.lower()
    assert (work / "iter_1.pth").is_file() and not (work / "iter_2.pth").exists()


def test_pseudo_labels_refuse_a_splits_ground_truth_by_content(voc3, tmp_path):
    """``--pseudo-labels`` given the eval-only ``train_gt.json``, also renamed and with a score
    on every box (so the pseudo-label contract's ``score`` check alone would pass): refused
    before any training, naming the file and the two right inputs."""
    from wsod.stages.strong import StrongStageError, run

    real = read_json(voc3["real"])
    scored = {**real, "annotations": [dict(a, score=1.0) for a in real["annotations"]]}
    no_info = {k: v for k, v in scored.items() if k != "info"}
    cases = {"as_written.json": real, "scored.json": scored, "scored_no_info.json": no_info}
    for name, data in cases.items():
        path = tmp_path / name
        write_json(path, data)
        with pytest.raises(StrongStageError, match="eval-only ground truth") as err:
            run(DEMO_CONFIG, path, tmp_path / "w", cfg_options=FAST, max_iters=1)
        assert str(path) in str(err.value) and "--fully-supervised-gt" in str(err.value)
        assert "make denoise" in str(err.value)
        assert not (tmp_path / "w").exists(), "refused before the work dir was made"
    assert contracts.ground_truth_marks(read_json(voc3["pseudo"])) == []
    assert len(contracts.ground_truth_marks(scored)) == 2
    assert len(contracts.ground_truth_marks(no_info)) == 1


def test_missing_data_root_and_class_mismatch_are_explained(voc3, tmp_path):
    from wsod.stages.strong import StrongStageError, run

    pl = read_json(voc3["pseudo"])
    pl["info"] = {}
    write_json(tmp_path / "noroot.json", pl)
    with pytest.raises(StrongStageError, match="--data-root"):
        run(DEMO_CONFIG, tmp_path / "noroot.json", tmp_path / "w")
    split = read_json(voc3["split"])
    split["categories"][0]["name"] = "plane"
    write_json(tmp_path / "split.json", split)
    with pytest.raises(StrongStageError, match="classes differ"):
        run(DEMO_CONFIG, voc3["pseudo"], tmp_path / "w", infer=[(tmp_path / "split.json", None)])
    with pytest.raises(StrongStageError, match="exactly one"):
        run(DEMO_CONFIG, voc3["pseudo"], tmp_path / "w", fully_supervised_gt=voc3["real"])


def test_train_annotations_contract(voc3, tmp_path):
    """``train_annotations.json`` is validated on write and on read: the stage's own file
    passes, a broken one fails with a message naming the file."""
    from wsod.stages.strong import build_train_annotations

    good = build_train_annotations(read_json(voc3["pseudo"]))
    contracts.validate_train_annotations(good)
    path = tmp_path / "train_annotations.json"
    write_json(path, good)
    assert contracts.load_train_annotations(path) == good
    breakages = {
        "lacks \\['weight'\\]": lambda d: d["annotations"][0].pop("weight"),
        "area": lambda d: d["annotations"][0].update(area=-1.0),
        "duplicate annotation id": lambda d: d["annotations"][1].update(id=1),
        "iscrowd": lambda d: d["annotations"][0].update(iscrowd=2),
        "weight": lambda d: d["annotations"][0].update(weight=float("nan")),
        "1..K": lambda d: d["categories"].append({"id": 50, "name": "extra"}),
        "unknown image": lambda d: d["annotations"][0].update(image_id=-5),
    }
    for i, (what, breaks) in enumerate(breakages.items()):
        bad = json.loads(json.dumps(good))
        breaks(bad)
        bad_path = tmp_path / f"broken_{i}.json"
        write_json(bad_path, bad)
        with pytest.raises(contracts.ContractError, match=what) as err:
            contracts.load_train_annotations(bad_path)
        assert str(err.value).startswith(str(bad_path)), what


def test_box_weight_has_one_definition(voc3):
    """The weight a box is written with: its ``weight``, else a pseudo label's score, else 1.0
    (the training annotations keep it; no strong config trains on it)."""
    from wsod.stages.strong import build_train_annotations

    assert contracts.box_weight({"score": 0.4, "weight": 0.7}) == 0.7
    assert contracts.box_weight({"score": 0.4}) == 0.4
    assert contracts.box_weight({"score": 0.4}, fully_supervised=True) == 1.0
    assert contracts.box_weight({}) == 1.0
    pseudo = read_json(voc3["pseudo"])
    pseudo["annotations"][0]["weight"] = 0.25
    written = build_train_annotations(pseudo)["annotations"]
    assert [a["weight"] for a in written] == [0.25] + [0.9] * (len(written) - 1)
    real = build_train_annotations(read_json(voc3["real"]), fully_supervised=True)
    assert {a["weight"] for a in real["annotations"]} == {1.0}


def test_cli_reaches_run(monkeypatch, capsys):
    import wsod.stages.strong as stage
    from wsod.cli import main

    seen = {}

    def fake_run(config, pseudo_labels, work_dir, **kwargs):
        seen.update(config=config, pseudo_labels=pseudo_labels, work_dir=work_dir, **kwargs)
        return {"outputs": []}

    monkeypatch.setattr(stage, "run", fake_run)
    rc = main(
        [
            "strong",
            "--config",
            "c.py",
            "--pseudo-labels",
            "pl.json",
            "--work-dir",
            "w",
            "--infer",
            "val.json:out.json",
            "--infer",
            "train.json",
            "--max-iters",
            "5",
            "--seed",
            "3",
            "--cfg-options",
            "optim_wrapper.optimizer.lr=0.001",
            "train_dataloader.batch_size=1",
            "--no-resume",
        ]
    )
    assert rc == 0
    assert seen["infer"] == [("val.json", None, "out.json"), ("train.json", None, None)]
    # the options given, in one object; the others at its defaults
    assert seen["options"] == stage.StrongOptions(
        cfg_options={"optim_wrapper.optimizer.lr": 0.001, "train_dataloader.batch_size": 1},
        max_iters=5,
        seed=3,
        resume=False,
    )
    assert "fully_supervised_gt" not in seen
    assert json.loads(capsys.readouterr().out) == {"outputs": []}

    with pytest.raises(SystemExit) as exit_:
        main(["strong", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "--fully-supervised-gt" in text and "--infer" in text
