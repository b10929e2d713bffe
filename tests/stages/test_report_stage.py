"""Stage ``report`` end to end on real VOC val images: evaluate -> report.md / report.html."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from wsod.report import cost as run_cost
from wsod.report.tables import comparison_table
from wsod.stages.report import run

PNG = b"\x89PNG\r\n\x1a\n"


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
    seen.clear()
    args = parser.parse_args(["--metrics", "m.json", "--out-dir", "d", "--run-dir", "R"])
    assert cmd.execute(args) == 0
    assert seen == {"metrics": "m.json", "out_dir": "d", "run_dir": "R"}


# ---------------------------------------------------------------- cost per stage, provenance
def _meta(path: Path, **meta) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{path}.meta.json").write_text(json.dumps(meta))


def _fake_run(run: Path) -> Path:
    """Three artifact sidecars (weak's without peak_rss_mb, proposals rerun last) plus sidecars
    that must be skipped: a checkpoint's and the report's own."""
    _meta(
        run / "data" / "train.json",
        stage="data",
        artifact=str(run / "data" / "train.json"),
        wall_time_s=7.045,
        peak_rss_mb={"self": 312.4, "largest_child": 1024.0},
        written_at="2026-12-02T19:36:28+0000",
        git_commit="eec43f9276153d981a8dffd1f0da03ce2d8ea8a4-dirty",
        command=["/work/main/wsod/__main__.py", "data", "--out-dir", "RUN/data"],
        config={},
    )
    _meta(
        run / "proposals" / "train.pkl",
        stage="proposals",
        artifact="proposals/train.pkl",
        wall_time_s=135.406,
        peak_rss_mb={"self": 2048.5, "largest_child": 512.0},
        written_at="2026-12-02T19:50:00+0000",
        git_commit="29424907759afbfeaef7c7028ea08e6bf2badd71",
        command=["/venv/bin/python", "-m", "wsod", "proposals", "--split", "a b.json"],
        config={},
    )
    _meta(
        run / "weak" / "weak_model.json",
        stage="weak",
        artifact="weak/weak_model.json",
        wall_time_s=416.103,
        written_at="2026-12-02T19:46:14+0000",
        git_commit="ea343e014e35cf891fb9d82d02c41ce39c53d764",
        command=["/work/main/wsod/__main__.py", "weak", "--work-dir", "RUN/weak"],
        config={},
    )
    skipped = dict(wall_time_s=999.0, written_at="2026-12-02T19:40:00+0000", stage="x")
    _meta(run / "weak" / "iter_400.pth", **skipped)
    _meta(run / "report" / "report.md", **skipped)
    return run


EXPECTED_ROWS = [
    [
        "data",
        "data/train.json",
        "0:07.0 (7.0 s)",
        "0.0 -> 0.1",
        "1024.0",
        "eec43f9-dirty",
        "2026-12-02T19:36:28+0000",
    ],
    [
        "weak",
        "weak/weak_model.json",
        "6:56.1 (416.1 s)",
        "2.9 -> 9.9",
        "n/a",
        "ea343e0",
        "2026-12-02T19:46:14+0000",
    ],
    [
        "proposals",
        "proposals/train.pkl",
        "2:15.4 (135.4 s)",
        "11.4 -> 13.7",
        "2048.5",
        "2942490",
        "2026-12-02T19:50:00+0000",
    ],
]
# 7.045 + 416.103 + 135.406 = 558.554 s; the timeline starts at 19:36:28 - 7.045 s, so the weak
# stage ran from 176.9 s (19:46:14 - 416.1 s) to 593.0 s and proposals from 683.6 s to 819.0 s
EXPECTED_TOTAL = [
    "**total**",
    "3 artifacts (sum of wall times)",
    "9:18.6 (558.6 s)",
    "0.0 -> 13.7",
    "max 2048.5",
]


def test_cost_rows_total_and_missing_rss(tmp_path: Path):
    cost = run_cost.collect(_fake_run(tmp_path / "run"))
    assert [r["artifact"] for r in cost["rows"]] == [
        "data/train.json",
        "weak/weak_model.json",
        "proposals/train.pkl",
    ]  # by written_at, not by path
    assert cost["total_wall_time_s"] == pytest.approx(558.554)
    assert cost["max_peak_rss_mb"] == 2048.5
    assert cost["rows"][1]["peak_rss_mb"] is None
    assert [r["command"] for r in cost["rows"]] == [
        "wsod data --out-dir RUN/data",
        "wsod weak --work-dir RUN/weak",
        "wsod proposals --split 'a b.json'",
    ]
    header, rows = run_cost.cost_table(cost)
    assert header == [
        "stage",
        "artifact",
        "wall time (m:s)",
        "start -> end (min)",
        "peak RSS (MB)",
        "git commit",
        "written at",
    ]
    assert rows == EXPECTED_ROWS + [EXPECTED_TOTAL + ["", ""]]
    _, per_stage = run_cost.stage_table(cost)
    assert per_stage[1] == ["weak", "1", "6:56.1 (416.1 s)", "2.9 -> 9.9", "n/a"]
    # disjoint intervals: 558.6 s of work over a 13.7-minute span (gaps between the stages)
    assert per_stage[-1] == ["**run**", "3", "9:18.6 (558.6 s)", "0.0 -> 13.7", "2048.5"]
    assert run_cost.commits(cost) == [
        ("eec43f9-dirty", ["data"]),
        ("ea343e0", ["weak"]),
        ("2942490", ["proposals"]),
    ]


def test_cost_formatting_and_overlap():
    assert run_cost.format_duration(59.96) == "1:00.0 (60.0 s)"
    assert run_cost.format_duration(0) == "0:00.0 (0.0 s)"
    assert run_cost.format_duration(3725.25) == "62:05.2 (3725.2 s)"
    assert run_cost.format_duration(None) == "n/a"
    assert run_cost.short_commit(None) == "unknown"
    assert run_cost.short_command("python -m wsod report --title 'a b'") == (
        "wsod report --title 'a b'"
    )
    assert run_cost.peak_rss({"peak_rss_mb": {"self": 10.0, "largest_child": None}}) == 10.0
    # the .pkl and its .npz twin share one clock: 100 s counted once, plus 20 s apart
    rows = [
        {"wall_time_s": 100.0, "written_at": "2026-12-02T10:01:40+0000"},
        {"wall_time_s": 99.5, "written_at": "2026-12-02T10:01:40+0000"},
        {"wall_time_s": 20.0, "written_at": "2026-12-02T11:00:00+0000"},
        {"wall_time_s": None, "written_at": "2026-12-02T12:00:00+0000"},
    ]
    assert run_cost.merged_seconds(rows) == pytest.approx(120.0)
    # a time without a readable written_at still counts, but has no place on the timeline
    loose = {"wall_time_s": 5.0, "written_at": "yesterday"}
    assert run_cost.merged_seconds([*rows, loose]) == pytest.approx(125.0)
    assert run_cost.interval(loose) is None and run_cost.interval(rows[3]) is None
    origin = run_cost.envelope([*rows, loose])[0]
    assert origin == run_cost.interval(rows[0])[0]  # 10:00:00
    assert (
        run_cost.format_span(run_cost.interval(rows[2]), origin) == "59.7 -> 60.0"
    )  # 20 s before 11:00
    assert run_cost.format_span(None, origin) == "n/a"


def test_report_cost_section_and_provenance(evaluated: dict, tmp_path: Path):
    run_dir = _fake_run(tmp_path / "run")
    metrics = run_dir / "eval" / "metrics.json"
    metrics.parent.mkdir()
    metrics.write_text(evaluated["metrics"].read_text())  # no sidecar: no row
    out = run_dir / "summary"  # not named report/: skipped as the output folder
    run(metrics, out, gallery_images=0)
    res = run(metrics, out, gallery_images=0)  # the first run's sidecars stay out of the table
    assert res["cost"]["run_dir"] == str(run_dir)  # default: RUN of RUN/eval/metrics.json
    assert len(res["cost"]["rows"]) == 3
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    lines = md.splitlines()
    start = lines.index("## Cost per stage")
    table = [line for line in lines[start:] if line.startswith("| ")][: len(EXPECTED_ROWS) + 2]
    assert table[1:] == ["| " + " | ".join(r) + " |" for r in EXPECTED_ROWS] + [
        "| " + " | ".join(EXPECTED_TOTAL) + " |  |  |"
    ]
    assert (
        "<h2>Cost per stage</h2>" in html
        and "<td>6:56.1 (416.1 s)</td><td>2.9 -&gt; 9.9</td><td>n/a</td>" in html
    )
    assert "<td>9:18.6 (558.6 s)</td><td>0.0 -&gt; 13.7</td><td>max 2048.5</td>" in html
    # results first: the commands in the appendix, after the detector table and the cost;
    # the warning on mixed code versions stays above the results
    results = lines.index("## Detectors side by side (AP@0.5, VOC07 11-point, %)")
    appendix = lines.index("## Appendix: how this run was made")
    assert results < start < appendix < lines.index("### Commands")
    assert "Git commits: eec43f9-dirty (data); ea343e0 (weak); 2942490 (proposals)." in md
    warning = next(i for i, ln in enumerate(lines) if "3 different code versions" in ln)
    assert warning < results
    assert "weak: wsod weak --work-dir RUN/weak" in md and "wsod proposals --split 'a b.json'" in md
    assert "iter_400" not in md and "999" not in md


def test_report_without_sidecars_says_so(evaluated: dict, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run(evaluated["metrics"], tmp_path / "r", gallery_images=0, run_dir=empty)
    md = (tmp_path / "r" / "report.md").read_text()
    lines = md.splitlines()
    i = lines.index("## Cost per stage")
    assert lines[i + 2] == f"No .meta.json sidecars found under the run directory {empty}."
    assert lines[i + 4].startswith("## ")  # one line, no table
    assert res["cost"]["rows"] == [] and res["cost"]["max_peak_rss_mb"] is None


def test_report_refuses_a_metrics_file_that_breaks_its_contract(evaluated: dict, tmp_path: Path):
    m = json.loads(evaluated["metrics"].read_text())
    del m["detectors"]["weak"]["per_class"][m["classes"][0]]["pr"]
    bad = tmp_path / "broken_metrics.json"
    bad.write_text(json.dumps(m))
    with pytest.raises(ValueError, match=r"broken_metrics\.json.*lacks \['pr'\].*wsod evaluate"):
        run(bad, tmp_path / "r", gallery_images=0)
    assert not (tmp_path / "r" / "report.md").exists()


def test_a_quick_look_says_so_above_the_results(evaluated: dict, tmp_path: Path):
    """Before: the quick look's report read like a result (the strong columns at 0 without a
    word). Now a callout above every number says it is a quick look of the named pipeline, that
    its numbers are meaningless and strong AP at 0 expected, and names the full run."""
    run(evaluated["metrics"], tmp_path / "q", gallery_images=0, quick_look="pipelines/mine.py")
    lines = (tmp_path / "q" / "report.md").read_text().splitlines()
    callout = next(i for i, ln in enumerate(lines) if "Quick look of pipelines/mine.py" in ln)
    assert callout < lines.index("## Detectors side by side (AP@0.5, VOC07 11-point, %)")
    text = lines[callout]
    assert "numbers say nothing" in text and "AP columns read 0" in text
    assert "`make all PIPELINE=pipelines/mine.py`" in text and "without QUICK=1" in text
    run(evaluated["metrics"], tmp_path / "full", gallery_images=0)
    assert "Quick look" not in (tmp_path / "full" / "report.md").read_text()


def test_the_quick_look_command_ends_with_what_to_run_next(evaluated: dict, tmp_path: Path):
    """The last line of `make all QUICK=1` is the report command's: it names the full run."""
    from wsod.cli import main

    out = tmp_path / "q"
    pipe = tmp_path / "quick.py"
    pipe.write_text("report = dict(quick_look='pipelines/mine.py', gallery_images=0)\n")
    argv = ["report", "--pipeline", str(pipe), "--metrics", str(evaluated["metrics"])]
    assert main([*argv, "--out-dir", str(out)]) == 0
    assert "Quick look of pipelines/mine.py" in (out / "report.md").read_text()


def test_a_class_without_training_images_is_marked_and_explained(evaluated: dict, tmp_path: Path):
    """Before: a class that no training image is tagged with showed AP 0 like a class the
    detector failed on. Its row says so now, and a note under the table explains the 0."""
    from wsod.stages.evaluate import run as evaluate

    work = evaluated["work"]
    train = json.loads((work / "train.json").read_text())
    names = {c["id"]: c["name"] for c in train["categories"]}
    tagged = {names[c] for im in train["images"] for c in im["labels"]}
    metrics = tmp_path / "metrics.json"
    evaluate(
        work / "val_gt.json",
        {"weak": work / "weak.json", "strong": work / "strong.json"},
        metrics,
        label_splits={"train": work / "train.json", "val": work / "val.json"},
    )
    run(metrics, tmp_path / "r", gallery_images=0)
    md = (tmp_path / "r" / "report.md").read_text()
    untrained = [c for c in names.values() if c not in tagged]
    assert untrained and tagged  # six real train images: some classes, not all
    for c in names.values():
        marked = f"| {c} (no train images) |" in md
        assert marked == (c in untrained), c
    note = next(ln for ln in md.splitlines() if ln.startswith("No training image is tagged"))
    assert ", ".join(untrained) in note and "0 by construction" in note


def test_provenance_shows_seeds_and_whole_configs(evaluated: dict, tmp_path: Path):
    """Before: a stage without a seed showed `None` and configs were cut at 600 characters
    with "...". Now such a seed reads "–" (explained) and every config is shown whole."""
    from wsod.utils.io import write_json_artifact

    work = evaluated["work"]
    long_cfg = {f"key_{i:03d}": "value " * 8 for i in range(40)}  # ~2,900 characters
    write_json_artifact(work / "strong.json", json.loads((work / "strong.json").read_text()),
                        stage="strong", seed=7, config=long_cfg)  # fmt: skip
    try:
        run(evaluated["metrics"], tmp_path / "r", gallery_images=0)
        md = (tmp_path / "r" / "report.md").read_text()
    finally:  # the module-scoped fixture's sidecar as it was
        write_json_artifact(work / "strong.json", json.loads((work / "strong.json").read_text()),
                            stage="strong", seed=7, config={"model": "faster_rcnn_test_cfg"})  # fmt: skip
    rows = [ln for ln in md.splitlines() if ln.startswith(("| metrics ", "| detections "))]
    assert rows[0].startswith("| metrics ") and rows[0].endswith("| – |")  # evaluate: no seed
    assert all("None" not in r for r in rows)
    assert "seed –: the stage takes no seed" in md
    config_line = next(ln for ln in md.splitlines() if ln.startswith("detections strong: {"))
    assert json.loads(config_line.split(": ", 1)[1]) == long_cfg  # whole, parseable
