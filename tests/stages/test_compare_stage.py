"""`wsod compare` / `make check`: a run's mAP beside docs/results.md's headline or another run,
with the documented run-to-run spread (docs/experiments/2026-12-03-strong-seed-spread.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wsod.evaluation.compare import SEED_SPREAD, headline_from_markdown
from wsod.stages.compare import CompareError, run

REPO = Path(__file__).resolve().parents[2]


def test_the_headline_table_of_results_md_is_read():
    head = headline_from_markdown((REPO / "docs/results.md").read_text())
    assert head["weak"] == {"mAP_11points": pytest.approx(0.285), "mAP_area": pytest.approx(0.262)}
    assert head["strong"]["mAP_11points"] == pytest.approx(0.276)
    assert head["fsd"]["mAP_11points"] == pytest.approx(0.460)
    assert head["strong_rescored"]["mAP_area"] == pytest.approx(0.259)


def test_the_spread_is_the_documented_one():
    doc = (REPO / "docs/experiments/2026-12-03-strong-seed-spread.md").read_text()
    assert f"**14.0 +- {SEED_SPREAD['strong'] * 100:.1f}**" in doc
    assert f"**17.7 +- {SEED_SPREAD['strong_rescored'] * 100:.1f}**" in doc
    assert f"**32.4 +- {SEED_SPREAD['fsd'] * 100:.1f}**" in doc


def _shifted(metrics: Path, out: Path, **shift: float) -> Path:
    m = json.loads(metrics.read_text())
    for name, delta in shift.items():
        m["detectors"][name]["mAP_11points"] += delta
    out.write_text(json.dumps(m))
    return out


def test_differences_within_and_beyond_the_spread(evaluated, tmp_path, capsys):
    metrics = evaluated["metrics"]
    same = run(metrics, against=metrics)
    assert same["rows"] and not same["beyond"]
    assert all(r["difference"] == 0 for r in same["rows"])
    # strong +1 point: within 2 x 2.6; weak +1 point: beyond 2 x 0.3
    other = _shifted(metrics, tmp_path / "other.json", strong=0.01, weak=0.01)
    res = run(other, against=metrics, out=tmp_path / "cmp.json")
    verdict = {(r["detector"], r["metric"]): r["beyond"] for r in res["rows"]}
    assert verdict[("strong", "mAP_11points")] is False
    assert verdict[("weak", "mAP_11points")] is True
    assert verdict[("strong", "mAP_area")] is False  # unchanged
    assert res["lines"][-1].startswith("1 of 4 differences beyond 2 x the run-to-run sd")
    assert json.loads((tmp_path / "cmp.json").read_text())["rows"] == res["rows"]
    # against the published headline (a 6-image toy run is far from it) through the CLI
    from wsod.cli import main

    assert (
        main(["compare", "--metrics", str(metrics), "--against", str(REPO / "docs/results.md")])
        == 0
    )
    out = capsys.readouterr().out
    assert "headline" in out and "BEYOND the spread" in out and "strong" in out


def test_missing_or_unrelated_reference_is_an_error(evaluated, tmp_path):
    with pytest.raises(CompareError, match=r"nothing\.json: no such file; give docs/results\.md"):
        run(evaluated["metrics"], against=tmp_path / "nothing.json")
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    with pytest.raises(CompareError, match="no headline table"):
        run(evaluated["metrics"], against=notes)


def test_make_check_compares_the_run_with_the_headline(tmp_path):
    import subprocess

    run_dir = tmp_path / "run"
    out = subprocess.run(
        ["make", "-n", "check", "PIPELINE=pipelines/voc07_cpu.py", f"RUN={run_dir}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert f"-m wsod compare --metrics {run_dir}/eval/metrics.json --against docs/results.md" in out
