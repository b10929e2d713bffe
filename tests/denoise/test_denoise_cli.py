"""`wsod denoise` reaches wsod.stages.denoise.run; --help works; strategies parse."""

from __future__ import annotations

import pytest

import wsod.cli as cli
import wsod.stages.denoise as stage
from wsod.denoise import DEFAULT_STRATEGIES, parse_strategies


@pytest.fixture
def only_denoise(monkeypatch):
    # other stages' command modules may not exist yet; the parser loads only this one
    monkeypatch.setattr(cli, "STAGES", ("denoise",))


def test_cli_reaches_run(monkeypatch, only_denoise, tmp_path):
    seen = {}

    def fake_run(detections, split, out, **kw):
        seen.update(detections=detections, split=split, out=out, **kw)
        return {}

    monkeypatch.setattr(stage, "run", fake_run)
    rc = cli.main(
        [
            "denoise",
            "--detections",
            "d.json",
            "--split",
            "s.json",
            "--out",
            "o.json",
            "--strategies",
            "[dict(type='topk', k=2)]",
            "--ablate",
            "--quality-gt",
            "ref.json",
            "--min-score",
            "0.01",
        ]
    )
    assert rc == 0
    assert seen == {
        "detections": "d.json",
        "split": "s.json",
        "out": "o.json",
        "strategies": "[dict(type='topk', k=2)]",
        "ablate": True,
        "quality_gt": "ref.json",
        "min_score": 0.01,
    }


def test_cli_omits_options_not_given_and_reports_errors(monkeypatch, only_denoise, capsys):
    seen = {}
    monkeypatch.setattr(stage, "run", lambda d, s, o, **kw: seen.update(kw))
    assert cli.main(["denoise", "--detections", "d", "--split", "s", "--out", "o"]) == 0
    assert seen == {}
    assert cli.main(["denoise", "--split", "s", "--out", "o"]) == 1
    assert "--detections is required" in capsys.readouterr().err


def test_help(only_denoise, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["denoise", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "--quality-gt" in text and "--ablate" in text and "wsod denoise --detections" in text


def test_parse_strategies_forms(tmp_path):
    want = [{"type": "topk", "k": 2}]
    assert parse_strategies('[{"type": "topk", "k": 2}]') == want
    assert parse_strategies("[{'type': 'topk', 'k': 2}]") == want
    assert parse_strategies("[dict(type='topk', k=2)]") == want
    assert parse_strategies("dict(type='mist', p=0.5)") == [{"type": "mist", "p": 0.5}]
    with pytest.raises(ValueError):
        parse_strategies("[__import__('os').system('true')]")
    (tmp_path / "s.json").write_text('[{"type": "topk", "k": 2}]')
    assert parse_strategies(tmp_path / "s.json") == want
    (tmp_path / "s.py").write_text("strategies = [dict(type='topk', k=2)]\n")
    assert parse_strategies(str(tmp_path / "s.py")) == want
    assert parse_strategies(None) == DEFAULT_STRATEGIES
    with pytest.raises(ValueError, match="not JSON"):
        parse_strategies("top1 please")
