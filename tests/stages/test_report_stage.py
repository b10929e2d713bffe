"""Stage ``report`` end to end on real VOC val images: evaluate -> report.md / report.html."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from wsod.stages.evaluate import run as evaluate
from wsod.stages.report import comparison_table, run
from wsod.utils.io import write_json_artifact

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def evaluated(voc_root: Path, tmp_path_factory) -> dict:
    from wsod.stages.data import run as data_run

    work = tmp_path_factory.mktemp("voc_report")
    data_run(voc_root, work, format="voc", splits=("val", "train"), limit=6)
    gt = json.loads((work / "val_gt.json").read_text())
    strong = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": a["bbox"],
            "score": 0.9 - 1e-3 * i,
        }
        for i, a in enumerate(gt["annotations"])
    ]
    weak = strong[::2]  # half the objects found: recall 1/2 or so per class, lower AP
    # sidecars with a seed and a config, as the upstream stages write them
    write_json_artifact(
        work / "strong.json",
        strong,
        stage="strong",
        seed=7,
        config={"model": "faster_rcnn_test_cfg"},
    )
    write_json_artifact(work / "weak.json", weak, stage="weak", seed=3, config={"model": "wsddn"})
    # pseudo labels = the train GT boxes (precision, recall and CorLoc 100 %)
    tgt = json.loads((work / "train_gt.json").read_text())
    pseudo = work / "pseudo.json"
    pseudo.write_text(
        json.dumps({**tgt, "annotations": [dict(a, score=0.7) for a in tgt["annotations"]]})
    )
    metrics = work / "metrics.json"
    evaluate(
        work / "val_gt.json",
        {"weak": work / "weak.json", "strong": work / "strong.json"},
        metrics,
        train_gt=work / "train_gt.json",
        pseudo_labels=pseudo,
    )
    return {
        "work": work,
        "metrics": metrics,
        "gt": work / "val_gt.json",
        "pseudo": pseudo,
        "n_train": len({a["image_id"] for a in tgt["annotations"]}),
        "n_images": len({a["image_id"] for a in gt["annotations"]}),
    }


def test_report_end_to_end(evaluated: dict, tmp_path: Path):
    out = tmp_path / "report"
    res = run(
        evaluated["metrics"],
        out,
        gt=evaluated["gt"],
        pseudo_labels=evaluated["pseudo"],
        gallery_images=3,
    )
    m = json.loads(evaluated["metrics"].read_text())
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert res["markdown"] == out / "report.md" and res["html"] == out / "report.html"
    assert Path(f"{out / 'report.html'}.meta.json").is_file()
    # figures and the gallery exist as PNG files
    for name in ("pr_curves.png", "ap_per_class.png"):
        assert (out / name).read_bytes()[:8] == PNG
    n_gallery = min(3, evaluated["n_images"]) + min(3, evaluated["n_train"])  # val + pseudo
    assert len(res["gallery"]) == n_gallery
    assert len(list(out.glob("pseudo_*.png"))) == min(3, evaluated["n_train"])
    assert all(p.read_bytes()[:8] == PNG for p in res["gallery"])
    # html is self-contained: every figure is embedded, nothing links to a file
    assert html.count("data:image/png;base64,") == 2 + len(res["gallery"])
    assert not re.search(r"src=['\"](?!data:)", html)
    # the side-by-side table with both detectors and the ratio; the mean row carries the numbers
    assert "<table>" in html and "weak AP" in html and "strong AP" in html
    assert "strong/weak" in md and "pseudo labels P/R/CorLoc (train)" in md
    assert "| 100.0 / 100.0 / 100.0 |" in md  # pseudo labels = train GT
    w, s = m["detectors"]["weak"]["mAP_11points"], m["detectors"]["strong"]["mAP_11points"]
    assert s == pytest.approx(1.0) and w < 1.0
    mean_row = next(line for line in md.splitlines() if line.startswith("| **mAP (11-point)"))
    assert f"{w * 100:.1f}" in mean_row and "100.0" in mean_row
    assert f"{s / w:.2f}" in mean_row
    assert "Retraining raised mAP" in md and "LOWERED" not in md and res["lowered"] is False
    # split, data caveats, GT note and provenance (seed/config from the sidecars)
    assert "Evaluated split: val" in md and "not the official VOC2007 test set" in md
    assert "difficult" in md and "Only evaluation reads ground-truth boxes" in md
    prov = [line for line in md.splitlines() if line.startswith("| detections strong")]
    assert prov and "| 7 |" in prov[0] and "| strong |" in prov[0]
    assert "faster_rcnn_test_cfg" in md and "wsddn" in md


def test_report_says_when_retraining_lowered_map(evaluated: dict, tmp_path: Path):
    m = json.loads(evaluated["metrics"].read_text())
    dets = m["detectors"]
    m["detectors"] = {"weak": dets["strong"], "strong": dets["weak"]}  # swap: strong is worse
    del m["ratios"]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(m))
    res = run(path, tmp_path / "r", gallery_images=0)  # no gt: tables and plots only
    md = (tmp_path / "r" / "report.md").read_text()
    assert res["lowered"] is True and res["gallery"] == []
    assert "Retraining LOWERED mAP" in md
    assert "Retraining LOWERED mAP" in (tmp_path / "r" / "report.html").read_text()


def test_comparison_table_columns_and_missing_metrics(evaluated: dict, tmp_path: Path):
    m = json.loads(evaluated["metrics"].read_text())
    header, rows = comparison_table(m)
    assert header == [
        "class",
        "#GT",
        "weak AP",
        "pseudo labels P/R/CorLoc (train)",
        "strong AP",
        "strong/weak",
    ]
    assert len(rows) == len(m["classes"]) + 3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"split": "val"}))
    with pytest.raises(ValueError, match="bad.json.*wsod evaluate"):
        run(bad, tmp_path / "x")


def test_cli_help_and_execute_reaches_run(monkeypatch, capsys):
    from wsod.commands import report as cmd

    parser = argparse.ArgumentParser(epilog=cmd.EXAMPLES)
    cmd.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    assert "wsod report --metrics" in capsys.readouterr().out
    seen = {}

    def fake_run(metrics, out_dir, **kw):
        seen.update(metrics=metrics, out_dir=out_dir, **kw)
        return {"html": "h", "markdown": "m", "figures": [1, 2], "gallery": []}

    monkeypatch.setattr("wsod.stages.report.run", fake_run)
    args = parser.parse_args(["--metrics", "m.json", "--out-dir", "d", "--gallery-images", "2"])
    assert cmd.execute(args) == 0
    assert seen == {"metrics": "m.json", "out_dir": "d", "gallery_images": 2}
