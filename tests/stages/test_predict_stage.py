"""The predict stage on real VOC images: a tiny strong detector (trained here as the strong
stage's tests train it) run on 3 real images plus an unreadable one, checked against the strong
stage's own detections with the same checkpoint; rescoring by a tiny CAM black box, checked
against `wsod rescore`'s arithmetic on the weak stage's own output; inputs, errors and the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import test_strong_stage as strong_tests
from PIL import Image
from test_weak_stage import FAST as WEAK_FAST

from wsod import contracts
from wsod.rescoring import IMAGE_SCORES_CFG_OPTIONS
from wsod.utils.io import read_json, write_json

REPO = Path(__file__).resolve().parents[2]
CAM_CONFIG = REPO / "configs/cam/cam_mobilenetv2_2k_voc07-train_voc07-val.py"
CAM_FAST = {k: v for k, v in WEAK_FAST.items() if "num_sample" not in k}
# the strong stage tests' tiny set-up, reused: its fixture (3 real VOC train images with pseudo
# labels) and its fast settings; one torch thread (tests/conftest.py)
voc3 = strong_tests.voc3
DEMO_CONFIG, FAST = strong_tests.DEMO_CONFIG, strong_tests.FAST
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def trained(voc3, tmp_path_factory):
    """A strong work dir (1 iteration on 3 real VOC images) and its detections on them."""
    from wsod.stages.strong import run

    work = tmp_path_factory.mktemp("predict") / "strong"
    res = run(
        DEMO_CONFIG,
        voc3["pseudo"],
        work,
        cfg_options=FAST,
        max_iters=1,
        infer=[(voc3["split"], None)],
    )
    split = contracts.load_split(voc3["split"])
    root = contracts.resolve_data_root(split, voc3["split"])
    return {
        "work": work,
        "split": split,
        "files": [root / im["file_name"] for im in split["images"]],
        "dets": contracts.load_detections(res["outputs"][0], split),
    }


def _by_file(dets, images) -> dict[str, list[tuple]]:
    """Detections keyed by image file name, each image's sorted by (-score, class, box)."""
    names = {im["id"]: Path(im["file_name"]).name for im in images}
    out: dict[str, list[tuple]] = {}
    for d in dets:
        out.setdefault(names[d["image_id"]], []).append((-d["score"], d["category_id"], *d["bbox"]))
    return {k: sorted(v) for k, v in out.items()}


def _assert_same(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for name in theirs:
        a, b = np.array(ours[name]), np.array(theirs[name])
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a[:, 0], b[:, 0], atol=1e-4)  # scores
        np.testing.assert_array_equal(a[:, 1], b[:, 1])  # classes
        np.testing.assert_allclose(a[:, 2:], b[:, 2:], atol=0.05)  # boxes, pixels


@pytest.mark.slow  # trains a detector (the module's fixtures)
def test_predict_matches_the_strong_stage_and_draws(trained, tmp_path, capsys):
    from wsod.stages.predict import run

    first, *rest = trained["files"]
    listed = tmp_path / "list.txt"
    listed.write_text("\n".join(str(p) for p in rest) + "\n")
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    out = tmp_path / "pred"
    res = run([first, listed, broken], out, strong_dir=trained["work"], device="cpu", draw_thr=0.0)

    assert res["images"] == 3 and res["skipped"] == [str(broken)]
    assert "broken.jpg: not a readable image, skipped" in capsys.readouterr().err
    split = contracts.load_split(out / "images.json")  # the written image list is a split
    assert [Path(im["file_name"]).name for im in split["images"]] == [
        p.name for p in trained["files"]
    ]
    assert [im["id"] for im in split["images"]] == [1, 2, 3]
    for im in split["images"]:
        with Image.open(Path(split["info"]["data_root"]) / im["file_name"]) as img:
            assert (im["width"], im["height"]) == img.size
    dets = contracts.load_detections(out / "detections.json", split)
    assert dets and {d["image_id"] for d in dets} == {1, 2, 3}
    _assert_same(
        _by_file(dets, split["images"]), _by_file(trained["dets"], trained["split"]["images"])
    )

    meta = read_json(out / "detections.json.meta.json")
    assert meta["stage"] == "predict" and meta["skipped"] == [str(broken)]
    assert meta["config"]["checkpoint"].endswith("iter_1.pth") and meta["rescore"] is None
    assert (out / "images.json.meta.json").is_file()
    assert len(res["vis"]) == 3
    for path, im in zip(res["vis"], split["images"], strict=True):
        with Image.open(path) as img:
            img.verify()
        with Image.open(path) as img:
            assert img.size == (im["width"], im["height"])
            drawn = np.asarray(img.convert("RGB"), np.int16)
        original = np.asarray(Image.open(trained["files"][im["id"] - 1]).convert("RGB"), np.int16)
        assert np.abs(drawn - original).mean() > 1.0  # boxes and labels were drawn on it


@pytest.fixture(scope="module")
def cam_black_box(voc3, tmp_path_factory):
    """A CAM black box trained 1 iteration on the same 3 images (the weak stage's work dir)."""
    from wsod.stages import weak

    work = tmp_path_factory.mktemp("predict_weak") / "weak"
    weak.run(CAM_CONFIG, work, train_split=voc3["split"], cfg_options=CAM_FAST, max_iters=1)
    return work


@pytest.mark.parametrize(
    "mode, proposal_settings",
    [
        ("image", {}),  # the CAM as an image classifier: one whole-image box per image
        ("detections", {"method": "selective_search", "max_boxes": 50, "resize": 200}),
    ],
)
@pytest.mark.slow  # trains a detector (the module's fixtures)
def test_rescored_by_the_black_box_equals_wsod_rescore(
    mode, proposal_settings, trained, voc3, cam_black_box, tmp_path
):
    """Rescoring on new images runs the black box on them: the result equals rescoring the
    strong stage's detections by the weak stage's own output on the same images (for
    ``detections``: on proposals computed with the same settings)."""
    from wsod.commands.predict import run_black_box
    from wsod.stages import proposals, rescore, weak
    from wsod.stages.predict import run

    # the same images as a split whose keys (file names) are predict's: selective search seeds
    # its ranking from each image's key
    ref = read_json(voc3["split"])
    ref["info"]["data_root"] = str(trained["files"][0].parent)
    for im in ref["images"]:
        im["file_name"] = Path(im["file_name"]).name
    ref_split = tmp_path / "ref_split.json"
    write_json(ref_split, ref)
    props = tmp_path / "props.pkl"
    options = dict(CAM_FAST)
    if mode == "image":
        proposals.run(ref_split, props, method="whole_image")
        options.update(IMAGE_SCORES_CFG_OPTIONS)
    else:
        proposals.run(ref_split, props, **proposal_settings)
    black_box = tmp_path / "black_box.json"
    weak.run(CAM_CONFIG, cam_black_box, infer=[(ref_split, props, black_box)], cfg_options=options)
    confidence = rescore.image_confidence(contracts.load_detections(black_box))
    expected = rescore.rescore_detections(trained["dets"], confidence)

    out = tmp_path / "pred"
    res = run(
        trained["files"],
        out,
        strong_dir=trained["work"],
        device="cpu",
        rescore=mode,
        weak_dir=cam_black_box,
        weak_config=CAM_CONFIG,
        weak_cfg_options=CAM_FAST,
        proposals={**proposal_settings, "workers": 1, "split": "ignored", "out": "ignored"},
        black_box=run_black_box,
    )
    split = contracts.load_split(out / "images.json")
    dets = contracts.load_detections(out / "detections.json", split)
    assert res["rescored"] == mode and 0 < len(dets) == len(expected)
    images = trained["split"]["images"]
    _assert_same(_by_file(dets, split["images"]), _by_file(expected, images))
    plain = contracts.load_detections(out / "strong_dets.json", split)
    _assert_same(_by_file(plain, split["images"]), _by_file(trained["dets"], images))
    bb = contracts.load_detections(out / "black_box_dets.json", split)
    _assert_same(
        _by_file(bb, split["images"]), _by_file(contracts.load_detections(black_box), images)
    )
    assert read_json(out / "detections.json.meta.json")["rescore"] == mode


def test_collect_images_folder_glob_list(tmp_path):
    from wsod.stages.predict import PredictError, collect_images

    for name in ("b.jpg", "a.png", "notes.md"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.JPG").write_bytes(b"x")
    (tmp_path / "list.txt").write_text("# images\nsub/c.JPG\n\na.png\n")
    assert [p.name for p in collect_images([tmp_path])] == ["a.png", "b.jpg"]
    assert [p.name for p in collect_images([f"{tmp_path}/**/*.[jJ]*"])] == ["b.jpg", "c.JPG"]
    got = collect_images([tmp_path / "list.txt", tmp_path / "b.jpg", tmp_path / "a.png"])
    assert [p.name for p in got] == ["c.JPG", "a.png", "b.jpg"]  # each once, in order
    with pytest.raises(PredictError, match="no such image, folder, glob or list file"):
        collect_images([tmp_path / "missing"])
    with pytest.raises(PredictError, match="no image files"):
        collect_images([f"{tmp_path}/*.gif"])


def test_list_file_and_non_image_errors_name_the_file_and_the_line(tmp_path):
    """Before: a list naming a missing image skipped it ("not a readable image") and exited 0,
    a notes.txt was read as a list and the error named its text, a non-image file was decoded
    and skipped; with no trained run the message said `make weak` / `make strong`."""
    from wsod.stages.predict import PredictError, collect_images, find_strong_model

    (tmp_path / "a.jpg").write_bytes(b"x")
    listed = tmp_path / "list.txt"
    listed.write_text("a.jpg\n# a comment\nmissing.jpg\n")
    with pytest.raises(PredictError, match=r"list\.txt:3: missing\.jpg: no such image") as err:
        collect_images([listed])
    assert str(tmp_path) in str(err.value)
    notes = tmp_path / "notes.txt"
    notes.write_text("Photos from the trip, to sort later.\nAsk Sam for the rest\n")
    with pytest.raises(PredictError, match=r"notes\.txt: not a list of images") as err:
        collect_images([tmp_path / "a.jpg", notes])
    assert "Photos from" not in str(err.value)
    doc = tmp_path / "readme.md"
    doc.write_text("# images\n")
    with pytest.raises(PredictError, match=r"readme\.md: neither an image .* nor a list file"):
        collect_images([doc])
    with pytest.raises(PredictError, match=r"no trained run here: .*`make all PIPELINE=\.\.\.`"):
        find_strong_model(tmp_path / "work_dirs" / "mine" / "strong")


@pytest.mark.slow  # trains a detector (the module's fixtures)
def test_missing_work_dir_or_checkpoint_names_path_and_make_target(trained, tmp_path):
    import shutil

    from wsod.stages.predict import PredictError, find_strong_model, run

    with pytest.raises(PredictError, match=r"no such strong work dir.*make all PIPELINE=") as err:
        run(trained["files"], tmp_path / "o", strong_dir=tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PredictError, match=r"strong_model.json: not found.*make all PIPELINE="):
        find_strong_model(tmp_path / "empty")
    moved = tmp_path / "moved"
    shutil.copytree(trained["work"], moved, ignore=shutil.ignore_patterns("2*", "stale"))
    found = find_strong_model(moved)  # a moved work dir still finds its own files
    with pytest.raises(PredictError, match=r"weak_model.json: no trained black box.*--no-rescore"):
        run(
            trained["files"],
            tmp_path / "o",
            strong_dir=moved,
            rescore="image",
            weak_dir=tmp_path,
            weak_config=CAM_CONFIG,
        )
    with pytest.raises(PredictError, match="give weak_dir"):
        run(trained["files"], tmp_path / "o", strong_dir=moved, rescore="image")
    assert Path(found["checkpoint"]).parent == moved and found["config"].endswith(
        "strong_config.py"
    )
    record = read_json(moved / "strong_model.json")
    write_json(moved / "strong_model.json", {**record, "checkpoint": str(moved / "iter_9.pth")})
    with pytest.raises(
        PredictError, match=r"iter_9.pth: the checkpoint named by .*make all PIPELINE="
    ):
        find_strong_model(moved)


def test_cli_reaches_run_and_reads_the_pipelines_rescoring(monkeypatch, tmp_path, capsys):
    import wsod.stages.predict as stage
    from wsod.cli import main
    from wsod.commands.predict import rescore_mode, run_black_box

    seen = {}

    def fake_run(images, out_dir, **kwargs):
        seen.clear()
        seen.update(images=images, out_dir=out_dir, **kwargs)
        return {"images": 1, "vis": []}

    monkeypatch.setattr(stage, "run", fake_run)
    base = ["predict", "--images", "a.jpg", "dir/", "--strong-dir", "s", "--out-dir", "o"]
    assert main([*base, "--draw-thr", "0.5", "--device", "cpu"]) == 0
    assert seen == {
        "images": ["a.jpg", "dir/"],
        "out_dir": "o",
        "strong_dir": "s",
        "draw_thr": 0.5,
        "device": "cpu",
        "rescore": None,
    }
    assert json.loads(capsys.readouterr().out) == {"images": 1}

    pipe = tmp_path / "p.py"
    pipe.write_text(
        "rescore_by_black_box = 'image'\n"
        "weak = dict(config='w.py', cfg_options=['a.b=1'])\n"
        "proposals = dict(method='selective_search', max_boxes=7)\n"
    )
    assert main([*base, "--pipeline", str(pipe), "--weak-dir", "wd"]) == 0
    assert seen["rescore"] == "image" and seen["weak_config"] == "w.py"
    assert seen["black_box"] is run_black_box  # the command runs the stages, not the stage
    assert seen["weak_dir"] == "wd" and seen["weak_cfg_options"] == {"a.b": 1}
    assert seen["proposals"] == {"method": "selective_search", "max_boxes": 7}
    assert main([*base, "--pipeline", str(pipe), "--no-rescore"]) == 0
    assert seen["rescore"] is None
    # the pipeline's spelling of the detections mode (rescore_by_black_box = 1) works here too
    assert main([*base, "--rescore", "1", "--weak-dir", "wd", "--weak-config", "w.py"]) == 0
    assert seen["rescore"] == "detections"
    assert main([*base, "--pipeline", str(pipe)]) == 1  # rescoring without the black box
    assert "--weak-dir" in capsys.readouterr().err
    assert [rescore_mode(v) for v in ("off", "detections", "image", 0, 1, None, True)] == [
        None,
        "detections",
        "image",
        None,
        "detections",
        None,
        "detections",
    ]

    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = capsys.readouterr().out
    assert "DetInferencer" in text and "strong_config.py" in text and "make predict" in text


def test_detects_in_the_precision_the_strong_stage_detected_in():
    """A test loop in bf16 (``fp16=True``: the strong stage's ``--precision bf16``) makes predict
    run each forward under the same autocast, with the hook's fp32 islands; fp32 stays fp32."""
    import contextlib

    import torch
    from mmengine.config import Config

    from wsod.models.mixed_precision import detection_autocast

    def model():
        return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))

    x = torch.ones(2, 4)
    fp32 = Config(dict(test_cfg=dict(type="TestLoop")))
    plain = model()
    assert detection_autocast(fp32, plain) is contextlib.nullcontext
    assert plain(x).dtype == torch.float32
    bf16 = Config(dict(test_cfg=dict(type="TestLoop", fp16=True)))
    m = model()
    with detection_autocast(bf16, m)():
        assert m(x).dtype == torch.bfloat16  # autocast entered
    islands = Config(
        dict(
            test_cfg=dict(type="TestLoop", fp16=True),
            custom_hooks=[dict(type="WSODFp32IslandsHook", outputs=["1"])],
        )
    )
    m = model()
    with detection_autocast(islands, m)():
        assert m(x).dtype == torch.float32  # the named module's output cast back
