"""Stage ``evaluate`` end to end on real VOC val images (gt built by the data stage)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from wsod.contracts import xywh_to_xyxy
from wsod.evaluation.caveats import KNOWN_DATASETS, SHARED_VOC2007
from wsod.stages.evaluate import named_paths, run

CAVEATS = KNOWN_DATASETS[SHARED_VOC2007]


@pytest.fixture(scope="module")
def voc_data(voc_root: Path, tmp_path_factory) -> Path:
    from wsod.stages.data import run as data_run

    out = tmp_path_factory.mktemp("voc_eval")
    data_run(voc_root, out, format="voc", splits=("val", "train"), limit=8)
    return out


def _gt_dets(gt: dict, score: float = 0.9) -> list[dict]:
    """Detections = the GT boxes, scores decreasing per annotation so that none tie."""
    return [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": list(a["bbox"]),
            "score": score - 1e-3 * i,
        }
        for i, a in enumerate(gt["annotations"])
    ]


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def test_perfect_and_perturbed_detections(voc_data: Path, tmp_path: Path):
    gt = json.loads((voc_data / "val_gt.json").read_text())
    assert gt["annotations"], "the real val images must carry boxes"
    perfect = _gt_dets(gt)
    # perturbation 1: one far-away false positive of class c, scored above everything, on an
    # image that has class c. For class c with n GT boxes the curve is FP, TP x n: precision at
    # the k-th TP is k/(k+1), so the envelope is n/(n+1) at every recall -> AP = n/(n+1) in
    # both modes; every other class keeps AP 1.
    c = gt["annotations"][0]["category_id"]
    n = sum(a["category_id"] == c for a in gt["annotations"])
    img = gt["annotations"][0]["image_id"]
    fp = {"image_id": img, "category_id": c, "bbox": [0.0, 0.0, 3.0, 3.0], "score": 0.99}
    # perturbation 2: all boxes of a second class d shrunk to a quarter (IoU 0.25 < 0.5): AP 0.
    d = next(a["category_id"] for a in gt["annotations"] if a["category_id"] != c)
    shrunk = []
    for det in perfect:
        det = dict(det)
        if det["category_id"] == d:
            x, y, w, h = det["bbox"]
            det["bbox"] = [x, y, w / 2, h / 2]
        shrunk.append(det)
    paths = {
        "strong": _write(tmp_path / "perfect.json", perfect),
        "weak": _write(tmp_path / "weak.json", shrunk + [fp]),
    }
    out = tmp_path / "metrics.json"
    m = run(voc_data / "val_gt.json", paths, out)
    assert out.is_file() and Path(f"{out}.meta.json").is_file()
    assert json.loads(out.read_text()) == json.loads(json.dumps(m))
    assert m["split"] == "val" and m["caveats"] == list(CAVEATS)
    assert "Only evaluation reads ground-truth boxes" in m["gt_note"]
    assert list(m["detectors"]) == ["weak", "strong"]  # weak first, whatever the input order

    s = m["detectors"]["strong"]
    assert s["mAP_11points"] == pytest.approx(1.0) and s["mAP_area"] == pytest.approx(1.0)
    assert s["coco"]["AP"] == pytest.approx(1.0) and s["coco"]["AP50"] == pytest.approx(1.0)

    names = {cat["id"]: cat["name"] for cat in gt["categories"]}
    present = {a["category_id"] for a in gt["annotations"]}
    w = m["detectors"]["weak"]
    pc = w["per_class"]
    assert pc[names[c]]["ap_area"] == pytest.approx(n / (n + 1), abs=1e-6)
    assert pc[names[c]]["ap_11points"] == pytest.approx(n / (n + 1), abs=1e-6)
    assert pc[names[d]]["ap_area"] == 0.0 and pc[names[d]]["num_tp"] == 0
    for k in present - {c, d}:
        assert pc[names[k]]["ap_area"] == pytest.approx(1.0)
    expected = (len(present) - 2 + n / (n + 1)) / len(present)  # classes without GT excluded
    assert w["mAP_area"] == pytest.approx(expected, abs=1e-6)
    absent = next(cid for cid in names if cid not in present)
    assert pc[names[absent]]["ap_area"] is None and pc[names[absent]]["num_gt"] == 0
    # the PR curve is stored at 101 recall levels per class
    pr = pc[names[c]]["pr"]
    assert len(pr["recall"]) == 101 and len(pr["precision"]) == 101
    assert pr["precision"][0] == pytest.approx(n / (n + 1), abs=1e-4)
    # strong/weak ratio and the "lowered" flag
    r = m["ratios"]["strong/weak"]
    assert r["mAP_11points"] == pytest.approx(1.0 / w["mAP_11points"], rel=1e-3)
    assert r["lowered"] is False
    m2 = run(
        voc_data / "val_gt.json",
        {"weak": paths["strong"], "strong": paths["weak"]},
        tmp_path / "m2.json",
    )
    assert m2["ratios"]["strong/weak"]["lowered"] is True


def test_unknown_image_is_refused(voc_data: Path, tmp_path: Path):
    bad = _write(
        tmp_path / "bad.json",
        [{"image_id": 99999999, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5}],
    )
    with pytest.raises(ValueError, match="bad.json"):
        run(voc_data / "val_gt.json", [str(bad)], tmp_path / "m.json")


def test_empty_detections_score_zero(voc_data: Path, tmp_path: Path):
    m = run(
        voc_data / "val_gt.json", [str(_write(tmp_path / "none.json", []))], tmp_path / "m.json"
    )
    d = m["detectors"]["none"]  # a bare path is named by its stem
    assert d["mAP_area"] == 0.0 and d["mAP_11points"] == 0.0 and d["coco"]["AP"] == 0.0


def test_named_paths(tmp_path: Path):
    assert named_paths(["weak=a/b.json", "c/strong_dets.json"]) == {
        "weak": Path("a/b.json"),
        "strong_dets": Path("c/strong_dets.json"),
    }
    assert named_paths(["x.json", "y.json"], names=["weak", "strong"]) == {
        "weak": Path("x.json"),
        "strong": Path("y.json"),
    }
    with pytest.raises(ValueError, match="twice"):
        named_paths(["a/w.json", "b/w.json"])


def test_gt_boxes_round_trip(voc_data: Path, voc_root: Path):
    """The gt reader gives the XML boxes, 0-based: VOC xmin 1-based -> x1 = xmin - 1."""
    import xml.etree.ElementTree as ET

    from wsod.evaluation.gt import gt_by_image, load_gt

    gt = load_gt(voc_data / "val_gt.json")
    per = gt_by_image(gt)
    im = gt["images"][0]
    root = ET.parse(voc_root / "Annotations" / (Path(im["file_name"]).stem + ".xml")).getroot()
    xml = np.array(
        [
            [float(o.find("bndbox").findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax")]
            for o in root.iter("object")
        ]
    )
    xml[:, :2] -= 1
    np.testing.assert_allclose(np.sort(per[im["id"]]["bboxes"], axis=0), np.sort(xml, axis=0))
    assert per[im["id"]]["difficult"].dtype == bool
    np.testing.assert_allclose(xywh_to_xyxy([[1, 2, 3, 4]]), [[1, 2, 4, 6]])


def test_cli_help_and_execute_reaches_run(monkeypatch, capsys):
    from wsod.commands import evaluate as cmd

    parser = argparse.ArgumentParser(epilog=cmd.EXAMPLES)
    cmd.add_arguments(parser)
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["--help"])
    assert e.value.code == 0
    assert "wsod evaluate --gt" in capsys.readouterr().out
    seen = {}

    def fake_run(gt, detections, out, **kw):
        seen.update(gt=gt, detections=detections, out=out, **kw)
        return {
            "split": "val",
            "detectors": {"weak": {"mAP_11points": 0.1, "mAP_area": 0.2, "coco": {"AP": 0.05}}},
        }

    monkeypatch.setattr("wsod.stages.evaluate.run", fake_run)
    args = parser.parse_args(
        ["--gt", "g.json", "--detections", "weak=w.json", "--out", "m.json", "--iou-thr", "0.6"]
    )
    assert cmd.execute(args) == 0
    assert seen == {"gt": "g.json", "detections": ["weak=w.json"], "out": "m.json", "iou_thr": 0.6}
    assert "weak: mAP@0.5" in capsys.readouterr().out


def test_train_side_corloc_and_pseudo_label_quality(voc_data: Path, tmp_path: Path):
    val_gt = json.loads((voc_data / "val_gt.json").read_text())
    train_gt = json.loads((voc_data / "train_gt.json").read_text())
    anns = train_gt["annotations"]
    # train detections = GT boxes: every (image, class) top box hits -> CorLoc 1
    tdets = _write(tmp_path / "train_dets.json", _gt_dets(train_gt))
    # pseudo labels = GT boxes, except that every box of class c is moved off its object:
    # class c gets precision 0, recall 0, CorLoc 0, AP 0; the others 1.
    c = anns[0]["category_id"]
    n_c = sum(a["category_id"] == c for a in anns)
    pl_anns = []
    for i, a in enumerate(anns):
        x, y, w, h = a["bbox"]
        bbox = [x + w, y + h, w, h] if a["category_id"] == c else [x, y, w, h]
        pl_anns.append(
            {
                "id": i + 1,
                "image_id": a["image_id"],
                "category_id": a["category_id"],
                "bbox": bbox,
                "area": w * h,
                "iscrowd": 0,
                "score": 0.8,
            }
        )
    pl = _write(
        tmp_path / "pseudo.json",
        {
            "images": train_gt["images"],
            "categories": train_gt["categories"],
            "annotations": pl_anns,
        },
    )
    m = run(
        voc_data / "val_gt.json",
        {"weak": _write(tmp_path / "w.json", _gt_dets(val_gt))},
        tmp_path / "metrics.json",
        train_gt=voc_data / "train_gt.json",
        train_detections=[f"weak={tdets}"],
        pseudo_labels=pl,
    )
    t = m["train"]
    assert t["split"] == "train" and t["num_images"] == len(train_gt["images"])
    assert t["detectors"]["weak"]["corloc"] == pytest.approx(1.0)
    names = {cat["id"]: cat["name"] for cat in train_gt["categories"]}
    p = t["pseudo_labels"]
    assert p["num_boxes"] == len(anns)
    assert p["box_precision"] == pytest.approx((len(anns) - n_c) / len(anns))
    assert p["box_recall"] == pytest.approx((len(anns) - n_c) / len(anns))
    k = len({a["category_id"] for a in anns})
    assert p["corloc"] == pytest.approx((k - 1) / k)
    assert p["per_class"][names[c]]["corloc"] == 0.0
    assert p["per_class"][names[c]]["box_precision"] == 0.0
    assert p["per_class"][names[c]]["ap_area"] == 0.0
    assert p["mAP_area"] == pytest.approx((k - 1) / k)
    with pytest.raises(ValueError, match="--train-gt"):
        run(
            voc_data / "val_gt.json",
            {"weak": tmp_path / "w.json"},
            tmp_path / "m3.json",
            pseudo_labels=pl,
        )


def test_wsod_main_reaches_evaluate_and_report(monkeypatch):
    from wsod.cli import main

    calls = []
    monkeypatch.setattr(
        "wsod.stages.evaluate.run",
        lambda *a, **k: calls.append(("evaluate", a, k)) or {"split": "val", "detectors": {}},
    )
    monkeypatch.setattr(
        "wsod.stages.report.run",
        lambda *a, **k: (
            calls.append(("report", a, k))
            or {"html": "h", "markdown": "m", "figures": [], "gallery": []}
        ),
    )
    assert main(["evaluate", "--gt", "g.json", "--detections", "x.json", "--out", "m.json"]) == 0
    assert main(["report", "--metrics", "m.json", "--out-dir", "d"]) == 0
    assert calls == [
        ("evaluate", ("g.json", ["x.json"], "m.json"), {}),
        ("report", ("m.json", "d"), {}),
    ]
    assert main(["evaluate", "--gt", "g.json"]) == 1  # missing --detections: one-line error


def test_metrics_file_follows_its_contract(voc_data: Path, tmp_path: Path):
    """What evaluate writes passes the contract the report reads it with; scoring is the
    domain function (wsod.evaluation.scoring), the stage only adds the file names."""
    from wsod.contracts import ContractError, load_metrics, validate_metrics
    from wsod.evaluation.gt import load_gt
    from wsod.evaluation.scoring import score_detections

    gt = json.loads((voc_data / "val_gt.json").read_text())
    dets = _gt_dets(gt)
    path = _write(tmp_path / "weak.json", dets)
    out = tmp_path / "metrics.json"
    m = run(voc_data / "val_gt.json", {"weak": path}, out)
    assert load_metrics(out) == json.loads(out.read_text())
    entry = score_detections(load_gt(voc_data / "val_gt.json"), dets)
    assert m["detectors"]["weak"] == json.loads(json.dumps({"file": str(path), **entry}))
    bad = json.loads(out.read_text())
    bad["detectors"]["weak"]["mAP_11points"] = "high"
    with pytest.raises(ContractError, match="mAP_11points"):
        validate_metrics(bad, where=str(out))
