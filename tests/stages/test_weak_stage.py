"""Weak stage: run() end to end on real VOC images (train, resume, infer), the importers for
each format (with exact mismatch reports), and the CLI."""

from __future__ import annotations

import functools
import json
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from proposal_grid import grid_proposals as _grid

from wsod import contracts

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "projects/mil_baselines/configs/oicr/oicr_mobilenetv2_4k_voc07-train_voc07-val.py"
FAST = {  # CPU test settings: no worker processes, 64 RoIs per image in training
    "train_dataloader.num_workers": 0,
    "train_dataloader.persistent_workers": False,
    "test_dataloader.num_workers": 0,
    "train_dataloader.dataset.pipeline.1.num_sample": 64,
    "default_hooks.logger.interval": 1,
}


def grid_proposals(width: int, height: int) -> dict[str, np.ndarray]:
    return _grid(width, height, (0.4, 0.6, 0.9))


@pytest.fixture(scope="module")
def voc_inputs(voc_root, tmp_path_factory) -> tuple[Path, Path, dict]:
    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run

    out = tmp_path_factory.mktemp("weak") / "data"
    run(voc_root, out, format="voc", splits=("train",), limit=3)
    split = json.loads((out / "train.json").read_text())
    props = {im["file_name"]: grid_proposals(im["width"], im["height"]) for im in split["images"]}
    pkl = out / "train_props.pkl"
    save_proposals(pkl, props, stage="test")  # .pkl (mmdet contract) + its .npz twin
    return out / "train.json", pkl, split


@pytest.mark.slow
def test_run_trains_resumes_and_writes_valid_detections(voc_inputs, tmp_path):
    from wsod.stages.weak import run

    split_path, pkl, split = voc_inputs
    work = tmp_path / "weak"
    every_step = {**FAST, "default_hooks.checkpoint.interval": 1}
    first = run(
        CONFIG,
        work,
        train_split=split_path,
        train_proposals=pkl,
        infer=[],
        cfg_options=every_step,
        max_iters=2,
    )
    assert first["iterations"] == 2 and first["resumed_from"] is None
    assert first["outputs"] == {}
    assert Path(first["checkpoint"]).name == "iter_2.pth"
    # interrupted after step 1: the work dir's last checkpoint is iter_1.pth
    (work / "iter_2.pth").unlink()
    (work / "last_checkpoint").write_text(str(work / "iter_1.pth"))

    second = run(
        CONFIG,
        work,
        train_split=split_path,
        train_proposals=pkl,
        cfg_options=every_step,
        max_iters=2,
    )
    assert Path(second["resumed_from"]).name == "iter_1.pth"  # resumed, not restarted
    assert second["iterations"] == 2
    assert Path(second["checkpoint"]).name == "iter_2.pth"
    logs = "".join(p.read_text() for p in work.glob("*/*.log"))
    assert "resumed" in logs.lower() and "Iter(train) [2/2]" in logs

    out = work / "train_dets.json"
    dets = contracts.load_detections(out, split)  # valid COCO results on this split's ids
    assert second["outputs"][str(out)]["detections"] == len(dets) > 0
    assert {d["image_id"] for d in dets} == {im["id"] for im in split["images"]}
    sizes = {im["id"]: (im["width"], im["height"]) for im in split["images"]}
    for d in dets:
        x, y, w, h = d["bbox"]
        W, H = sizes[d["image_id"]]
        assert 1 <= d["category_id"] <= 20 and x >= 0 and y >= 0
        assert x + w <= W + 0.01 and y + h <= H + 0.01
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["stage"] == "weak" and str(split_path) in meta["inputs_sha256"]
    resolved = (work / "weak_config.py").read_text()
    assert str(pkl) in resolved and "max_iters=2" in resolved
    model = json.loads((work / "weak_model.json").read_text())
    assert model["iterations"] == 2 and len(model["classes"]) == 20

    # no training split: detect with the work dir's last checkpoint
    again = run(CONFIG, work, infer=[(split_path, pkl, tmp_path / "again.json")], cfg_options=FAST)
    assert again["checkpoint"] == second["checkpoint"]
    assert len(contracts.load_detections(tmp_path / "again.json", split)) == len(dets)

    # another run in the same work dir (here another seed; likewise another config or training
    # inputs) is not resumed from this run's checkpoints: they move to stale/, nothing is lost
    third = run(
        CONFIG,
        work,
        train_split=split_path,
        train_proposals=pkl,
        cfg_options=every_step,
        max_iters=1,
        seed=1,
        infer=[],
    )
    assert third["resumed_from"] is None and third["iterations"] == 1
    (stale,) = (work / "stale").iterdir()
    assert {p.name for p in stale.iterdir()} >= {"iter_1.pth", "iter_2.pth", "weak_run.json"}
    assert sorted(p.name for p in work.glob("iter_*.pth")) == ["iter_1.pth"]


@pytest.mark.slow
def test_cam_image_scores_on_whole_image_proposals_rescore_a_detector(voc_inputs, tmp_path):
    """The CAM black box as an image classifier (no proposals at test time): one whole-image
    box per class scoring its probability, usable by ``wsod rescore`` as the black box."""
    from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS
    from wsod.stages import proposals, rescore
    from wsod.stages.weak import run

    split_path, _, split = voc_inputs
    whole = tmp_path / "whole.pkl"
    proposals.run(split_path, whole, method="whole_image")
    cam = REPO / "configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py"
    fast = {k: v for k, v in FAST.items() if "num_sample" not in k}
    work = tmp_path / "cam"
    # the CAM trains on whole images: no training proposals, and then no default detection
    trained = run(cam, work, train_split=split_path, cfg_options=fast, max_iters=1)
    assert trained["iterations"] == 1 and trained["outputs"] == {}
    model = json.loads((work / "weak_model.json").read_text())
    assert model["checkpoint"] == trained["checkpoint"]
    meta = json.loads((work / "weak_model.json.meta.json").read_text())
    assert [Path(p).name for p in meta["inputs_sha256"]] == [split_path.name]
    out = tmp_path / "image_scores.json"
    image_mode = {**fast, **IMAGE_SCORES_CFG_OPTIONS}
    run(cam, work, infer=[(split_path, whole, out)], cfg_options=image_mode)
    scores = contracts.load_detections(out, split)
    # the same with the training split given (as `make` passes it): the head's box scoring is
    # a test-time setting (WSODCAMHead.TEST_TIME_ARGS), so the finished run is not retrained
    again = run(cam, work, train_split=split_path, cfg_options=image_mode, max_iters=1, infer=[])
    assert again["checkpoint"] == trained["checkpoint"] and not (work / "stale").exists()
    assert len(scores) == 20 * len(split["images"])  # every class of every image, once
    sizes = {im["id"]: [0.0, 0.0, im["width"], im["height"]] for im in split["images"]}
    for d in scores:
        assert d["bbox"] == pytest.approx(sizes[d["image_id"]], abs=0.01)
        assert 0 < d["score"] < 1
    # the same checkpoint's box detections score the box times that probability: never above it
    boxes = tmp_path / "dets.json"
    run(cam, work, infer=[(split_path, voc_inputs[1], boxes)], cfg_options=fast)
    # ... also with the CAM refined by the colour walk on the real images: other boxes, valid
    walked = tmp_path / "walked.json"
    refine = {
        **fast,
        "+model.roi_head.refine.type": "colour",
        "+model.roi_head.refine.iters": 5,
        "+model.roi_head.refine.dilations": (1, 4),
    }
    run(cam, work, infer=[(split_path, voc_inputs[1], walked)], cfg_options=refine)
    walk = contracts.load_detections(walked, split)
    assert walk and {(d["image_id"], tuple(d["bbox"])) for d in walk} != {
        (d["image_id"], tuple(d["bbox"])) for d in contracts.load_detections(boxes, split)
    }
    prob = rescore.image_confidence(scores)
    dets = contracts.load_detections(boxes, split)
    assert dets and all(d["score"] <= prob[d["image_id"], d["category_id"]] + 1e-6 for d in dets)
    rescored = rescore.rescore_detections(dets, prob)
    assert len(rescored) == len(dets)
    # the 4k config's smaller area weight on the same checkpoint: the same probability cap
    other = REPO / "configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py"
    other_out = tmp_path / "other_dets.json"
    ckpt = {**fast, "load_from": trained["checkpoint"]}
    run(other, tmp_path / "4k", infer=[(split_path, voc_inputs[1], other_out)], cfg_options=ckpt)
    four = contracts.load_detections(other_out, split)
    assert four and all(d["score"] <= prob[d["image_id"], d["category_id"]] + 1e-6 for d in four)


def test_run_rejects_bad_inputs(voc_inputs, tmp_path):
    from wsod.stages.weak import WeakStageError, run

    split_path, pkl, _ = voc_inputs
    with pytest.raises(WeakStageError, match="trains on proposals"):
        run(CONFIG, tmp_path, train_split=split_path)  # OICR: proposals are its input
    with pytest.raises(WeakStageError, match="needs the split"):
        run(CONFIG, tmp_path, train_proposals=pkl, infer=[(split_path, pkl, None)])
    with pytest.raises(WeakStageError, match="no such proposal file"):
        run(CONFIG, tmp_path, train_split=split_path, train_proposals=tmp_path / "none.pkl")
    with pytest.raises(WeakStageError, match="no checkpoint"):
        run(CONFIG, tmp_path / "empty", infer=[(split_path, pkl, None)])
    with pytest.raises(WeakStageError, match="no such seed file"):
        run(
            CONFIG,
            tmp_path / "seeded",
            train_split=split_path,
            train_proposals=pkl,
            # a key the OICR config does not have: new, hence "+" (strict --cfg-options)
            cfg_options={"+train_dataloader.dataset.seed_file": str(tmp_path / "none.json")},
        )
    assert not (tmp_path / "seeded" / "weak_run.json").exists()


def test_refusals_leave_no_work_dir_behind(voc_inputs, tmp_path):
    """Before: the pickle refusal and the phase-schedule refusal came once the runner was built,
    leaving weak_run.json, weak_config.py and a log folder behind. Now both are refused before
    anything is written; the named phase option passes the same check."""
    import shutil

    from wsod.stages.weak import WeakStageError, run

    split_path, pkl, _ = voc_inputs
    bare = tmp_path / "bare.pkl"
    shutil.copy(pkl, bare)  # a pickle without its .npz twin
    work = tmp_path / "pickled"
    with pytest.raises(WeakStageError, match=r"bare\.pkl: a pickle without its \.npz twin.*"
                       r"--allow-pickle"):  # fmt: skip
        run(CONFIG, work, train_split=split_path, train_proposals=bare, infer=[])
    assert not work.exists()
    cam = REPO / "configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py"
    work = tmp_path / "phase"
    with pytest.raises(
        WeakStageError, match=r"start_iter 4000 >= max_iters 10.*--affinity-start-iter 8"
    ):
        run(cam, work, train_split=split_path, max_iters=10, infer=[])
    assert not work.exists()
    with pytest.raises(WeakStageError, match=r"start_iter 10 >= max_iters 10"):
        run(cam, work, train_split=split_path, max_iters=10, affinity_start_iter=10, infer=[])
    assert not work.exists()
    one_phase = REPO / "configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py"
    with pytest.raises(WeakStageError, match=r"has no affinity phase"):
        run(one_phase, work, train_split=split_path, affinity_start_iter=5, infer=[])
    assert not work.exists()


# --------------------------------------------------------------------------- importers
def _two_images(split):
    a, b = split["images"][:2]
    return a, b


def test_import_coco_results(voc_inputs, tmp_path):
    from wsod.detections.importers import DetectionImportError
    from wsod.stages.weak import import_detections

    split_path, _, split = voc_inputs
    a, b = _two_images(split)
    good = [
        {"image_id": a["id"], "category_id": 15, "bbox": [1, 2, 30, 40], "score": 0.9},
        {
            "image_id": Path(b["file_name"]).stem,
            "category_name": "dog",
            "bbox": [0, 0, 10, 10],
            "score": 0.5,
        },
    ]
    bad = [
        {"image_id": 999999, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.1},
        {"image_id": a["id"], "category_id": 77, "bbox": [0, 0, 1, 1], "score": 0.1},
    ]
    src = tmp_path / "dets.json"
    src.write_text(json.dumps(good + bad))
    with pytest.raises(DetectionImportError) as e:
        import_detections(src, split_path, out=tmp_path / "out.json")
    msg = str(e.value)
    assert "999999" in msg and "'77'" in msg and "--drop-unmatched" in msg
    res = import_detections(src, split_path, work_dir=tmp_path, drop_unmatched=True, min_coverage=0)
    out = tmp_path / "train_dets.json"
    dets = contracts.load_detections(out, split)
    assert [(d["image_id"], d["category_id"]) for d in dets] == [(a["id"], 15), (b["id"], 12)]
    assert res["report"]["unmatched_images"] == {"999999": 1}
    assert res["report"]["unmatched_classes"] == {"77": 1}
    assert res["report"]["images_without_detections"] == 1
    assert json.loads(Path(f"{out}.meta.json").read_text())["stage"] == "weak"


def test_import_voc_txt(voc_inputs, tmp_path):
    from wsod.detections.importers import DetectionImportError
    from wsod.stages.weak import import_detections

    split_path, _, split = voc_inputs
    a, b = _two_images(split)
    sa, sb = Path(a["file_name"]).stem, Path(b["file_name"]).stem
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "comp4_det_train_person.txt").write_text(
        f"{sa} 0.9 1 1 100 50\n{sb} 0.3 11.5 21 40 60\n"
    )
    (folder / "comp4_det_train_diningtable.txt").write_text(f"{sa} 0.2 5 5 10 10\n")
    res = import_detections(folder, split_path, out=tmp_path / "voc.json", min_coverage=0)
    assert res["report"]["format"] == "voc_txt" and res["report"]["num_kept"] == 3
    dets = contracts.load_detections(tmp_path / "voc.json", split)
    first = next(d for d in dets if d["score"] == 0.9)
    # 1-based inclusive (1,1)-(100,50) -> 0-based x=0, y=0, w=100, h=50
    assert first["bbox"] == [0.0, 0.0, 100.0, 50.0] and first["category_id"] == 15
    assert next(d for d in dets if d["score"] == 0.2)["category_id"] == 11  # diningtable
    # a glob works too; an unknown class and an unknown image are both named
    (folder / "comp4_det_train_unicorn.txt").write_text(f"{sa} 0.5 1 1 2 2\n")
    (folder / "comp4_det_train_cat.txt").write_text("424242 0.5 1 1 2 2\nnot a line\n")
    with pytest.raises(DetectionImportError) as e:
        import_detections(
            str(folder / "comp4_det_*.txt"),
            split_path,
            out=tmp_path / "x.json",
        )
    msg = str(e.value)
    assert "unicorn" in msg and "424242" in msg and "malformed" in msg


def test_import_pcl_pkl(voc_inputs, tmp_path, recwarn):
    from wsod.detections.importers import DetectionImportError
    from wsod.stages.weak import import_detections

    split_path, _, split = voc_inputs
    n = len(split["images"])
    all_boxes = [[np.zeros((0, 5)) for _ in range(n)] for _ in range(21)]  # bg + 20
    all_boxes[15][1] = np.array([[0, 0, 9, 19, 0.8]])  # person, 2nd image, 0-based inclusive
    src = tmp_path / "detections.pkl"
    src.write_bytes(pickle.dumps({"all_boxes": all_boxes}))
    with pytest.raises(DetectionImportError, match="--allow-pickle"):
        import_detections(src, split_path, out=tmp_path / "p.json")
    import_detections(
        src,
        split_path,
        out=tmp_path / "p.json",
        allow_pickle=True,
        min_coverage=0,
    )
    assert any("unpickling" in str(w.message) for w in recwarn)
    dets = contracts.load_detections(tmp_path / "p.json", split)
    assert dets == [
        {
            "image_id": split["images"][1]["id"],
            "category_id": 15,
            "bbox": [0.0, 0.0, 10.0, 20.0],
            "score": 0.8,
        }
    ]
    all_boxes[1] = all_boxes[1][:-1]  # one image short
    src.write_bytes(pickle.dumps({"all_boxes": all_boxes}))
    with pytest.raises(DetectionImportError, match="images per class"):
        import_detections(
            src,
            split_path,
            out=tmp_path / "p.json",
            allow_pickle=True,
        )


def _voc_txt_files(folder: Path, split: dict, classes: list[str]) -> None:
    """One VOC result file per class in ``classes``: a box on every image of the split."""
    folder.mkdir(exist_ok=True)
    for c in classes:
        lines = [f"{Path(im['file_name']).stem} 0.5 1 1 20 20\n" for im in split["images"]]
        (folder / f"comp4_det_train_{c}.txt").write_text("".join(lines))


def test_import_of_a_few_class_files_is_refused_below_the_coverage(voc_inputs, tmp_path, capsys):
    """Probe: 3 of the 20 class files. Before, the import succeeded silently; now it is refused
    below --min-coverage, naming the classes without detections and counting the images."""
    from wsod.detections.importers import MIN_COVERAGE, DetectionImportError
    from wsod.stages.weak import import_detections

    split_path, _, split = voc_inputs
    names = contracts.category_names(split)
    labelled = sorted({names[c - 1] for im in split["images"] for c in im["labels"]})
    some = labelled[:1] + [n for n in names if n not in labelled][:2]  # 3 files, 1 labelled
    _voc_txt_files(tmp_path / "three", split, some)
    with pytest.raises(DetectionImportError) as e:
        import_detections(tmp_path / "three", split_path, out=tmp_path / "o.json")
    msg = str(e.value)
    assert f"--min-coverage {MIN_COVERAGE:g}" in msg and "17 classes without any detection" in msg
    assert all(f"'{n}'" in msg for n in names if n not in some)
    assert not (tmp_path / "o.json").exists()
    # the user lowers the threshold: imported, the gaps printed and kept in the report
    res = import_detections(
        tmp_path / "three",
        split_path,
        out=tmp_path / "o.json",
        min_coverage=0.0,
    )
    report = res["report"]
    assert sorted(report["classes_without_detections"]) == sorted(set(names) - set(some))
    assert report["images_without_detections"] == 0 and report["coverage"] < MIN_COVERAGE
    assert "17 classes without any detection" in capsys.readouterr().err
    # every class file: full coverage, nothing printed
    _voc_txt_files(tmp_path / "all", split, names)
    res = import_detections(tmp_path / "all", split_path, out=tmp_path / "a.json")
    assert res["report"]["coverage"] == 1.0 and res["report"]["classes_without_detections"] == []
    assert capsys.readouterr().err == ""
    with pytest.raises(DetectionImportError, match="want a share"):
        import_detections(
            tmp_path / "all",
            split_path,
            out=tmp_path / "a.json",
            min_coverage=90,
        )


def test_min_coverage_option_reaches_the_import_and_typos_are_refused(monkeypatch, capsys):
    import wsod.stages.weak as stage
    from wsod.cli import main

    with pytest.raises(TypeError, match="min_coverag"):  # the library refuses a typo too
        stage.import_detections("r.json", "s.json", min_coverag=0.5)
    calls = []
    fake = functools.wraps(stage.import_detections)(lambda *a, **k: calls.append(k) or {})
    monkeypatch.setattr(stage, "import_detections", fake)  # its signature: the real one's
    base = ["weak", "--import", "r.json", "--split", "s.json", "--out", "o.json"]
    assert main([*base, "--min-coverage", "0.5"]) == 0
    assert calls[0]["min_coverage"] == 0.5
    with pytest.raises(SystemExit):
        main([*base, "--min-coverag3", "0.5"])  # not an option: argparse refuses it
    assert "unrecognized arguments: --min-coverag3" in capsys.readouterr().err
    # training and detection options would be ignored by an import: refused, named, not run
    calls.clear()
    for extra in (["--infer", "v.json:p.pkl"], ["--no-infer"], ["--train-split", "t.json"]):
        assert main([*base, *extra]) == 1
        assert extra[0] in capsys.readouterr().err and not calls


# --------------------------------------------------------------------------- CLI
def test_cli_reaches_run(monkeypatch, capsys):
    import wsod.stages.weak as stage
    from wsod.cli import main

    calls = []
    monkeypatch.setattr(stage, "run", lambda *a, **k: calls.append((a, k)) or {"ok": 1})
    rc = main(
        [
            "weak",
            "--config",
            "c.py",
            "--work-dir",
            "w",
            "--train-split",
            "s.json",
            "--train-proposals",
            "p.pkl",
            "--infer",
            "v.json:vp.pkl:o.json",
            "--infer",
            "t.json:tp.pkl",
            "--cfg-options",
            "train_cfg.max_iters=5",
            "--seed",
            "3",
            "--no-resume",
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out) == {"ok": 1}
    ((args, kwargs),) = calls
    assert args == ("c.py", "w")
    assert kwargs == {
        "train_split": "s.json",
        "train_proposals": "p.pkl",
        "infer": [("v.json", "vp.pkl", "o.json"), ("t.json", "tp.pkl", None)],
        # the options given, in one object; the others at its defaults
        "options": stage.WeakOptions(cfg_options={"train_cfg.max_iters": 5}, seed=3, resume=False),
    }
    calls.clear()
    fake = functools.wraps(stage.import_detections)(lambda *a, **k: calls.append((a, k)) or {})
    monkeypatch.setattr(stage, "import_detections", fake)  # its signature: the real one's
    rc = main(
        [
            "weak",
            "--import",
            "r.json",
            "--split",
            "s.json",
            "--out",
            "o.json",
            "--allow-pickle",
            "--import-format",
            "coco",
        ]
    )
    assert rc == 0
    assert calls[0][1] == {
        "import_file": "r.json",
        "split": "s.json",
        "out": "o.json",
        "allow_pickle": True,
        "import_format": "coco",
    }


def test_cli_help(capsys):
    from wsod.cli import main

    with pytest.raises(SystemExit) as e:
        main(["weak", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "wsod weak --config configs/cam/" in out and "--import" in out
    assert "--launcher pytorch" in out
    named = set(re.findall(r"(?:configs|projects)/[\w./-]+\.py", out))
    assert len(named) >= 4
    for cfg in named:
        assert (REPO / cfg).is_file(), f"the help names {cfg}"


def test_cli_error_is_one_line(tmp_path, capsys):
    from wsod.cli import main

    rc = main(
        [
            "weak",
            "--import",
            str(tmp_path / "none.json"),
            "--split",
            str(tmp_path / "none_split.json"),
            "--out",
            str(tmp_path / "o.json"),
        ]
    )
    assert rc == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "none_split.json" in err
    assert sys.executable  # the CLI ran in-process


@pytest.mark.slow
def test_cam_affinity_phase_trains_the_branch_alone_then_walks_on_it(voc_inputs, tmp_path):
    """The Lite0 CAM with its affinity phase on real VOC images: step 1 trains the classifier,
    step 2 the branch alone (classifier and trunk unchanged); detection walks on the learned
    affinities. A checkpoint whose branch never trained is refused instead of walked on."""
    import torch

    from wsod.stages.weak import run

    split_path, pkl, split = voc_inputs
    cfg = REPO / "configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py"
    fast = {k: v for k, v in FAST.items() if "num_sample" not in k}
    opts = {**fast, "custom_hooks.1.start_iter": 1, "default_hooks.checkpoint.interval": 1}
    work, out = tmp_path / "aff", tmp_path / "dets.json"
    run(
        cfg,
        work,
        train_split=split_path,
        cfg_options=opts,
        max_iters=2,
        infer=[(split_path, pkl, out)],
    )
    first, second = (
        torch.load(work / f"iter_{i}.pth", map_location="cpu", weights_only=False)["state_dict"]
        for i in (1, 2)
    )
    assert (
        int(first["roi_head.affinity_steps"]) == 0 and int(second["roi_head.affinity_steps"]) == 1
    )
    moved = {k for k in first if not torch.equal(first[k], second[k])}
    assert moved and all(k.startswith("roi_head.affinity") for k in moved)
    dets = contracts.load_detections(out, split)
    assert dets and all(d["bbox"][2] > 0 and d["bbox"][3] > 0 for d in dets)
    # a schedule that ends before the branch's phase is refused before training
    untrained = tmp_path / "untrained"
    with pytest.raises(Exception, match=r"never trained.*--affinity-start-iter"):
        run(
            cfg,
            untrained,
            train_split=split_path,
            cfg_options=opts,
            max_iters=1,
            infer=[(split_path, pkl, tmp_path / "no.json")],
        )
    assert not list(untrained.glob("iter_*.pth"))
