"""The strong stage with a detector that reads proposals (Fast R-CNN, issue 39 lever 2), on 3
real VOC images with their real selective-search proposals: train (2 iterations) + detect,
resume, another proposal file starts over, the fully supervised reference, the CLI, and the
refusals (proposals missing, or given to a config that does not read them, a pickle without
its twin).

The pseudo labels are the images' real boxes with a score (read by the test through the data
stage's eval-only file: tests may read ground truth, the stage itself never does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_runs import tiny_strong_options

from wsod import contracts
from wsod.stages import data as data_stage
from wsod.stages import proposals as proposals_stage
from wsod.utils.io import read_json, write_json

REPO = Path(__file__).resolve().parents[2]
FAST_RCNN = (
    REPO
    / "projects/fast_rcnn/configs/fast-rcnn_efficientnet-lite0_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py"
)
FASTER = REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2min_demo-pseudo_demo-val.py"
# tiny and quick (tests/tiny_runs.py), inputs at most 160 px
FAST = tiny_strong_options(
    "train_dataloader.dataset.pipeline.3.transforms.0.scale",
    "test_dataloader.dataset.pipeline.2.transforms.0.scale",
    160,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def voc3(voc_root, tmp_path_factory):
    """train.json (3 real VOC train images), its real boxes, pseudo labels made of them, and
    the split's selective-search proposals (`wsod proposals` on 200-px copies, <= 100 boxes)."""
    out = tmp_path_factory.mktemp("strong_proposals")
    data_stage.run(voc_root, out, format="voc", splits=["train"], limit=3)
    real = read_json(out / "train_gt.json")
    pseudo = {
        "info": {"data_root": str(voc_root), "split_file": str(out / "train.json")},
        "images": real["images"],
        "categories": real["categories"],
        "annotations": [
            {k: a[k] for k in ("id", "image_id", "category_id", "bbox")} | {"score": 0.9}
            for a in real["annotations"]
        ],
    }
    write_json(out / "pseudo_train.json", pseudo)
    props = out / "proposals" / "train.pkl"
    proposals_stage.run(out / "train.json", props, resize=200, max_boxes=100)
    return {
        "split": out / "train.json",
        "real": out / "train_gt.json",
        "pseudo": out / "pseudo_train.json",
        "proposals": props,
    }


def _other_proposals(voc3, path: Path) -> Path:
    """Another proposal file of the same images: the first 20 boxes of each."""
    from wsod.proposals.store import load_proposals, save_proposals

    props = load_proposals(voc3["proposals"])
    fewer = {k: {"bboxes": v["bboxes"][:20], "scores": v["scores"][:20]} for k, v in props.items()}
    save_proposals(path, fewer, stage="test")
    return path


@pytest.mark.slow
def test_fast_rcnn_trains_and_detects_on_proposals(voc3, tmp_path):
    from wsod.stages.strong import run

    work, out = tmp_path / "strong", tmp_path / "dets.json"
    train_props = _copy(voc3["proposals"], tmp_path / "props" / "train.pkl")
    kw = dict(cfg_options=FAST, max_iters=2, train_proposals=train_props)
    res = run(
        FAST_RCNN, voc3["pseudo"], work, infer=[(voc3["split"], voc3["proposals"], out)], **kw
    )
    assert res["iterations"] == 2 and res["resumed_from"] is None
    assert res["outputs"] == [str(out)]
    split = contracts.load_split(voc3["split"])
    dets = contracts.load_detections(out, split)
    assert {d["image_id"] for d in dets} == {im["id"] for im in split["images"]}
    # the detections start from the proposals: every box overlaps one of its image's
    from wsod.proposals.store import load_proposals
    from wsod.utils.boxes import box_iou

    props = load_proposals(voc3["proposals"])
    files = {im["id"]: im["file_name"] for im in split["images"]}
    for d in dets[:50]:
        x, y, w, h = d["bbox"]
        iou = box_iou(np.array([[x, y, x + w, y + h]]), props[files[d["image_id"]]]["bboxes"])
        assert iou.max() > 0.5, d
    meta = read_json(f"{out}.meta.json")
    assert str(voc3["proposals"]) in meta["inputs_sha256"]
    resolved = (work / "strong_config.py").read_text()
    assert str(train_props.resolve()) in resolved and "FastRCNN" in resolved
    record = read_json(work / "strong_run.json")
    assert record["proposals_sha256"] and record["proposals"] == str(train_props)

    # the same run again: resumed at its end, nothing trained
    again = run(FAST_RCNN, voc3["pseudo"], work, **kw)
    assert again["resumed_from"].endswith("iter_2.pth")

    # other proposals at the same path (and nothing else changed) is another run: its
    # checkpoints move to stale/ and training starts over
    _other_proposals(voc3, train_props)
    fresh = run(FAST_RCNN, voc3["pseudo"], work, **kw)
    assert fresh["resumed_from"] is None and fresh["iterations"] == 2
    (stale,) = (work / "stale").iterdir()
    assert "iter_2.pth" in {p.name for p in stale.iterdir()}
    assert read_json(work / "strong_run.json")["proposals_sha256"] != record["proposals_sha256"]


def _copy(props: Path, to: Path) -> Path:
    """A copy of a proposal file and its .npz twin."""
    import shutil

    to.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".pkl", ".npz"):
        shutil.copy(props.with_suffix(suffix), to.with_suffix(suffix))
    return to


def test_fingerprint_holds_the_proposals_content(voc3, tmp_path):
    """Same path, other content: another digest (the path alone would not tell)."""
    from wsod.training.proposal_inputs import proposals_digest

    a = _copy(voc3["proposals"], tmp_path / "a" / "train.pkl")
    first = proposals_digest(a)
    assert first == proposals_digest(voc3["proposals"]) and proposals_digest(None) == ""
    _other_proposals(voc3, a)
    assert proposals_digest(a) != first


@pytest.mark.slow
def test_fully_supervised_reference_reads_proposals(voc3, tmp_path):
    from wsod.cli import main

    work = tmp_path / "fsd"
    options = [f"{k}={v!r}" if isinstance(v, tuple) else f"{k}={v}" for k, v in FAST.items()]
    argv = ["strong", "--config", str(FAST_RCNN), "--work-dir", str(work)]
    argv += ["--fully-supervised-gt", str(voc3["real"]), "--max-iters", "1"]
    argv += ["--train-proposals", str(voc3["proposals"])]
    argv += ["--infer", f"{voc3['split']}:{voc3['proposals']}", "--cfg-options", *options]
    assert main(argv) == 0
    out = work / "fsd_train_dets.json"
    contracts.load_detections(out, contracts.load_split(voc3["split"]))
    assert read_json(f"{out}.meta.json")["fully_supervised"] is True
    assert read_json(work / "strong_run.json")["proposals_sha256"]


def test_proposals_and_config_must_agree(voc3, tmp_path):
    """Refused before anything is written, each message naming the file and the fix."""
    from wsod.stages.strong import StrongStageError, run

    work = tmp_path / "w"
    split, props = voc3["split"], voc3["proposals"]
    with pytest.raises(StrongStageError, match="reads proposals") as err:
        run(FAST_RCNN, voc3["pseudo"], work, infer=[(split, props, None)])
    assert str(FAST_RCNN) in str(err.value) and "--train-proposals" in str(err.value)
    with pytest.raises(StrongStageError, match="reads proposals") as err:
        run(FAST_RCNN, None, work, fully_supervised_gt=voc3["real"])
    assert "--train-proposals" in str(err.value)
    with pytest.raises(StrongStageError, match="none were given to detect") as err:
        run(FAST_RCNN, voc3["pseudo"], work, train_proposals=props, infer=[(split, None)])
    assert str(split) in str(err.value) and "PROPOSALS" in str(err.value)
    for kw in ({"train_proposals": props}, {"infer": [(split, props, None)]}):
        with pytest.raises(StrongStageError, match="does not read them") as err:
            run(FASTER, voc3["pseudo"], work, **kw)
        assert str(props) in str(err.value) and "projects/fast_rcnn/configs/" in str(err.value)
    missing = tmp_path / "nowhere.pkl"
    with pytest.raises(StrongStageError, match="no such proposal file") as err:
        run(FAST_RCNN, voc3["pseudo"], work, train_proposals=missing)
    assert str(missing) in str(err.value) and "wsod proposals" in str(err.value)
    assert not work.exists(), "refused before the work dir was made"


def test_a_pickle_without_its_twin_needs_allow_pickle(voc3, tmp_path):
    from wsod.proposals.store import load_proposals, pickle_bytes
    from wsod.stages.strong import StrongStageError, run

    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle_bytes(load_proposals(voc3["proposals"])))
    work = tmp_path / "w"
    with pytest.raises(StrongStageError, match="without its .npz twin.*--allow-pickle"):
        run(FAST_RCNN, voc3["pseudo"], work, train_proposals=plain)
    assert not work.exists()
    # with the opt-in it goes on (to the next check: detecting on a split without proposals)
    with pytest.raises(StrongStageError, match="none were given to detect"):
        run(FAST_RCNN, voc3["pseudo"], work, train_proposals=plain, allow_pickle=True,
            infer=[(voc3["split"], None)])  # fmt: skip


def test_cli_infer_entries():
    from wsod.commands.strong import parse_infer

    assert parse_infer(["v.json", "v.json:o.json", "v.json:p.pkl", "v.json:p.npz:o.json"]) == [
        ("v.json", None, None),
        ("v.json", None, "o.json"),
        ("v.json", "p.pkl", None),
        ("v.json", "p.npz", "o.json"),
    ]
    assert parse_infer(["v.json::o.json", ("v.json", "p.pkl", "o.json")]) == [
        ("v.json", None, "o.json"),
        ("v.json", "p.pkl", "o.json"),
    ]
    with pytest.raises(ValueError, match="SPLIT:PROPOSALS:OUT"):
        parse_infer(["a:b:c:d"])


def test_predict_refuses_a_detector_that_reads_proposals():
    """`wsod predict` computes no proposals for new images (yet): a clear refusal, not mmdet's
    missing-RPN error."""
    from wsod.stages.predict import PredictError, load_detector

    with pytest.raises(PredictError, match="reads precomputed proposals") as err:
        load_detector({"config": str(FAST_RCNN), "checkpoint": "missing.pth"}, "cpu")
    assert "--infer SPLIT:PROPOSALS:OUT" in str(err.value)
