"""Stage ``rescore``: hand-made cases, then real VOC val images (split from the data stage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wsod.cli import main
from wsod.contracts import detections_by_image
from wsod.evaluation.gt import class_ids, gt_by_image
from wsod.evaluation.voc import eval_voc
from wsod.rescoring import (
    IMAGE_SCORES_CFG_OPTIONS,
    black_box_mode,
    image_confidence,
    rescore_detections,
)
from wsod.stages.rescore import run


def _det(img, cat, score, box=(0.0, 0.0, 10.0, 10.0)):
    return {"image_id": img, "category_id": cat, "bbox": list(box), "score": score}


def test_confidence_is_the_black_box_max_and_scores_multiply():
    bb = [_det(1, 3, 0.2), _det(1, 3, 0.7), _det(1, 5, 0.4), _det(2, 3, 0.1)]
    assert image_confidence(bb) == {(1, 3): 0.7, (1, 5): 0.4, (2, 3): 0.1}
    dets = [_det(1, 3, 0.5), _det(1, 5, 0.5), _det(2, 5, 0.9), _det(2, 3, 1.0)]
    out = rescore_detections(dets, image_confidence(bb))
    # (2, 5): the black box never saw class 5 in image 2 -> dropped
    assert [(d["image_id"], d["category_id"]) for d in out] == [(1, 3), (1, 5), (2, 3)]
    assert [d["score"] for d in out] == pytest.approx([0.35, 0.2, 0.1])
    assert out[0]["bbox"] == dets[0]["bbox"] and dets[0]["score"] == 0.5  # input untouched


def test_black_box_mode_normalises_the_pipeline_value():
    for value, mode in (
        ("off", "off"),
        ("detections", "detections"),
        ("image", "image"),
        ("Image", "image"),
        # the values pipelines wrote before the modes had names
        (None, "off"),
        (False, "off"),
        (0, "off"),
        ("0", "off"),
        (True, "detections"),
        (1, "detections"),
        ("1", "detections"),
    ):
        assert black_box_mode(value) == mode, value
    for bad in (2, "yes", [1], 0.5, "detection"):
        with pytest.raises(
            ValueError, match=r"p\.py: rescore_by_black_box = .*want 'off', 'detections' or 'image'"
        ):
            black_box_mode(bad, where="p.py")


def test_image_mode_needs_a_cam_black_box_whose_config_takes_the_overrides():
    from mmengine.config import Config

    from wsod.models.roi_heads.cam_scoring import check_scoring

    repo = Path(__file__).resolve().parents[2]
    cam = Config.fromfile(str(repo / "configs/cam/cam_mobilenetv2_demo.py"))
    assert black_box_mode("image", cam) == "image"
    cam.merge_from_dict(dict(IMAGE_SCORES_CFG_OPTIONS))  # the overrides fit the CAM head
    assert cam.model.roi_head.test_cfg.score_thr == 0
    assert check_scoring(cam.model.roi_head.scoring) == {"type": "image"}
    oicr_cfg = repo / "projects/mil_baselines/configs/oicr/oicr_mobilenetv2_demo.py"
    oicr = Config.fromfile(str(oicr_cfg))
    assert black_box_mode("detections", oicr) == "detections"
    with pytest.raises(ValueError, match=r"p\.py: rescore_by_black_box = 'image' .*'detections'"):
        black_box_mode("image", oicr, where="p.py")


@pytest.fixture(scope="module")
def voc_val(voc_root: Path, tmp_path_factory) -> Path:
    from wsod.stages.data import run as data_run

    out = tmp_path_factory.mktemp("voc_rescore")
    data_run(voc_root, out, format="voc", splits=("val",), limit=8)
    return out


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def _map(dets: list, gt: dict) -> float:
    res = eval_voc(detections_by_image(dets), gt_by_image(gt), class_ids(gt))
    return res["mAP"]["11points"]


def test_rescoring_removes_confusions_on_real_val_images(voc_val: Path, tmp_path: Path):
    gt = json.loads((voc_val / "val_gt.json").read_text())
    split = json.loads((voc_val / "val.json").read_text())
    with_gt = sorted({a["category_id"] for a in gt["annotations"]})  # classes scored by mAP
    labels = {im["id"]: set(im["labels"]) for im in split["images"]}
    # a detector that finds every real box but also calls it a class absent from the image (but
    # present in another one), more confidently
    dets = []
    for a in gt["annotations"]:
        wrong = next(c for c in with_gt if c not in labels[a["image_id"]])
        dets += [
            _det(a["image_id"], a["category_id"], 0.5, a["bbox"]),
            _det(a["image_id"], wrong, 0.6, a["bbox"]),
        ]
    # a black box that is sure of each image's labelled classes (its boxes are elsewhere)
    bb = [_det(im["id"], c, 0.8) for im in split["images"] for c in im["labels"]]
    before = _map(dets, gt)
    out = tmp_path / "rescored.json"
    summary = run(
        _write(tmp_path / "dets.json", dets),
        _write(tmp_path / "bb.json", bb),
        out,
        split=voc_val / "val.json",
    )
    rescored = json.loads(out.read_text())
    assert all(d["category_id"] in labels[d["image_id"]] for d in rescored)
    assert summary["kept"] == len(rescored) < summary["detections"] == len(dets)
    assert _map(rescored, gt) == pytest.approx(1.0)
    assert before < 0.99  # the confusions did cost AP before
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert meta["stage"] == "rescore"


def test_ids_are_checked_against_the_split_and_errors_name_the_file(voc_val, tmp_path, capsys):
    split = json.loads((voc_val / "val.json").read_text())
    img = split["images"][0]["id"]
    dets = _write(tmp_path / "dets.json", [_det(img, 1, 0.5)])
    bad = _write(tmp_path / "bb.json", [_det(10**9, 1, 0.5)])
    with pytest.raises(ValueError, match="bb.json"):
        run(dets, bad, tmp_path / "out.json", split=voc_val / "val.json")
    empty = _write(tmp_path / "empty.json", [])
    with pytest.raises(ValueError, match="empty.json"):
        run(dets, empty, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()

    good = _write(tmp_path / "good.json", [_det(img, 1, 0.25)])
    out = tmp_path / "cli.json"
    args = ["rescore", "--detections", str(dets), "--black-box", str(good), "--out", str(out)]
    assert main([*args, "--split", str(voc_val / "val.json")]) == 0
    assert json.loads(out.read_text())[0]["score"] == pytest.approx(0.125)
    assert main(args[:3] + ["--out", str(out)]) == 1
    assert "--black-box is required" in capsys.readouterr().err
