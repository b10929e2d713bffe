"""docs/extending.md's worked examples run: every code block that names a file is written to a
scratch folder (never into the repository) and run on real VOC 2007 images, so the guide cannot
drift from the code it describes."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "extending.md"
BLOCK = re.compile(r"^```python file=(\S+)\n(.*?)^```$", re.S | re.M)
EXAMPLES = {
    "wsod/denoise/largest.py",
    "tests/denoise/test_largest.py",
    "pipelines/demo_largest.py",
    "projects/lse_cam/lse_cam/__init__.py",
    "projects/lse_cam/lse_cam/lse_cam_head.py",
    "projects/lse_cam/configs/cam-lse_mobilenetv2_demo.py",
    "tools/class_folders_to_csv.py",
}


def blocks(text: str | None = None) -> dict[str, str]:
    """``{file: code}`` of the guide's ```` ```python file=... ```` blocks."""
    return {m[1]: m[2] for m in BLOCK.finditer(GUIDE.read_text() if text is None else text)}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, code in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(code)


def test_the_guide_holds_every_example_and_they_compile():
    found = blocks()
    assert set(found) == EXAMPLES, "examples added or removed: update EXAMPLES and their tests"
    for rel, code in found.items():
        compile(code, rel, "exec")
    # the extraction itself: a block without file= is prose, not an example
    assert blocks("```python\nx = 1\n```\n```python file=a.py\ny = 2\n```\n") == {"a.py": "y = 2\n"}


@pytest.fixture
def largest_confident():
    """The guide's strategy registered under its name for one test, then removed."""
    from wsod.denoise.registry import STRATEGIES

    module = types.ModuleType("wsod.denoise.largest")
    exec(
        compile(blocks()["wsod/denoise/largest.py"], "wsod/denoise/largest.py", "exec"),
        vars(module),
    )
    try:
        yield module
    finally:
        STRATEGIES.pop("largest_confident", None)


def test_strategy_example_and_its_test_run(largest_confident):
    namespace: dict = {}
    code = blocks()["tests/denoise/test_largest.py"]
    exec(compile(code, "tests/denoise/test_largest.py", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests
    for test in tests:
        test()


def test_strategy_example_on_voc_takes_objects_where_top1_takes_parts(
    largest_confident, voc_root, tmp_path, monkeypatch
):
    """On 12 VOC train images with detections built around their real boxes (a part of the first
    object outscores every object; the test reads the boxes, the chain does not), top-1 takes
    the part every time and the example takes a real object's box; the guide's pipeline passes
    the pipeline check."""
    import wsod.cli as cli
    from tests.denoise.test_multi_instance_voc import synthetic_detections
    from wsod.pipeline.checks import check_values
    from wsod.stages.data import run as data_run

    data_run(voc_root, tmp_path, format="voc", splits=("train",), limit=12)
    gt = json.loads((tmp_path / "train_gt.json").read_text())
    (tmp_path / "dets.json").write_text(json.dumps(synthetic_detections(gt)))
    objects = {(a["image_id"], a["category_id"], tuple(a["bbox"])) for a in gt["annotations"]}

    def pseudo_boxes(chain: str) -> set:
        out = tmp_path / "pseudo.json"
        argv = ["denoise", "--detections", str(tmp_path / "dets.json"), "--split"]
        assert (
            cli.main(
                [*argv, str(tmp_path / "train.json"), "--out", str(out), "--strategies", chain]
            )
            == 0
        )
        anns = json.loads(out.read_text())["annotations"]
        return {(a["image_id"], a["category_id"], tuple(a["bbox"])) for a in anns}

    top1 = pseudo_boxes("[dict(type='top1')]")
    largest = pseudo_boxes("[dict(type='largest_confident', rel_score=0.5)]")
    pairs = {(i, c) for i, c, _ in objects}
    assert {(i, c) for i, c, _ in largest} == pairs == {(i, c) for i, c, _ in top1}
    assert not top1 & objects  # the 0.9 part, every time
    assert largest <= objects  # a real object's box for every labelled class

    _write(tmp_path / "repo", {"pipelines/demo_largest.py": blocks()["pipelines/demo_largest.py"]})
    (tmp_path / "repo/pipelines/demo.py").symlink_to(REPO / "pipelines/demo.py")
    monkeypatch.chdir(REPO)  # the demo pipeline names its configs relative to the repository
    pipeline = check_values(tmp_path / "repo/pipelines/demo_largest.py")
    assert pipeline["denoise"]["strategies"][1] == dict(type="largest_confident", rel_score=0.5)


@pytest.mark.slow
def test_black_box_example_trains_and_detects_through_the_weak_stage(
    voc_root, tmp_path, monkeypatch
):
    """The guide's head, package and config in a scratch projects/ folder: two training steps
    on three VOC train images through `wsod.stages.weak.run`, then valid detections."""
    from proposal_grid import grid_proposals

    from wsod import contracts
    from wsod.proposals.store import save_proposals
    from wsod.stages.data import run as data_run
    from wsod.stages.weak import run

    root = tmp_path / "repo"
    _write(root, {k: v for k, v in blocks().items() if k.startswith("projects/lse_cam/")})
    (root / "configs").symlink_to(REPO / "configs")  # the config's _base_ path
    monkeypatch.syspath_prepend(str(root))  # `projects` is a namespace package: lse_cam joins it
    data_run(voc_root, tmp_path / "data", format="voc", splits=("train",), limit=3)
    split_path = tmp_path / "data" / "train.json"
    split = json.loads(split_path.read_text())
    props = {
        im["file_name"]: grid_proposals(im["width"], im["height"], (0.4, 0.6, 0.9))
        for im in split["images"]
    }
    pkl = tmp_path / "data" / "train_props.pkl"
    save_proposals(pkl, props, stage="test")
    out = tmp_path / "dets.json"
    result = run(
        root / "projects/lse_cam/configs/cam-lse_mobilenetv2_demo.py",
        tmp_path / "weak",
        train_split=split_path,
        infer=[(split_path, pkl, out)],
        cfg_options={
            "model.backbone.init_cfg": None,
            "train_dataloader.num_workers": 0,
            "train_dataloader.persistent_workers": False,
            "test_dataloader.num_workers": 0,
        },
        max_iters=2,
    )
    assert result["iterations"] == 2
    assert "WSODLSECAMHead" in (tmp_path / "weak" / "weak_config.py").read_text()
    # the head the weak stage built is the guide's, registered by the scratch package
    from mmdet.registry import MODELS

    assert MODELS.get("WSODLSECAMHead") is sys.modules["projects.lse_cam.lse_cam"].WSODLSECAMHead
    dets = contracts.load_detections(out, split)
    assert dets and {d["image_id"] for d in dets} <= {im["id"] for im in split["images"]}


def test_dataset_example_converts_class_folders_that_wsod_data_reads(voc_root, tmp_path):
    """Class folders made of real VOC images (each under the first class of its image-level
    labels): the guide's converter writes train.csv, and `wsod data --format csv` reads it."""
    from wsod.stages.data import run as data_run

    data_run(voc_root, tmp_path / "voc", format="voc", splits=("train",), limit=6)
    voc = json.loads((tmp_path / "voc/train.json").read_text())
    names = {c["id"]: c["name"] for c in voc["categories"]}
    root = tmp_path / "folders"
    for im in voc["images"]:
        link = root / "train" / names[im["labels"][0]] / Path(im["file_name"]).name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(voc["info"]["data_root"]) / im["file_name"])
    module = types.ModuleType("class_folders_to_csv")
    exec(
        compile(blocks()["tools/class_folders_to_csv.py"], "class_folders_to_csv", "exec"),
        vars(module),
    )
    csv_file = module.class_folders_to_csv(root, "train")
    assert csv_file == root / "train.csv" and len(csv_file.read_text().splitlines()) == 1 + 6

    data_run(root, tmp_path / "data", format="csv", splits=("train",))
    split = json.loads((tmp_path / "data/train.json").read_text())
    tags = {Path(im["file_name"]).name: im["labels"] for im in split["images"]}
    classes = {c["id"]: c["name"] for c in split["categories"]}
    expected = {Path(im["file_name"]).name: names[im["labels"][0]] for im in voc["images"]}
    assert {f: [classes[c] for c in t] for f, t in tags.items()} == {
        f: [n] for f, n in expected.items()
    }
    with pytest.raises(SystemExit, match="no <class>/<image> files"):
        module.class_folders_to_csv(root, "val")
