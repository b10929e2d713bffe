"""Pipeline files: dotted values for the Makefile and per-stage stamps."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from wsod.pipeline import get_value, write_section_stamps

PIPE = """
run_name = 'x'
fsd = 1
data = dict(source='data/demo', format='demo')
proposals = dict(method='selective_search', max_boxes=500)
weak = dict(config='configs/cam/a.py', seed=0)
strong = dict(config='configs/faster_rcnn/b.py', seed=0)
"""


def test_get_value_reads_dotted_keys_with_defaults(tmp_path):
    p = tmp_path / "pipe.py"
    p.write_text(PIPE)
    assert get_value(p, "weak.config") == "configs/cam/a.py"
    assert get_value(p, "fsd") == "1"
    assert get_value(p, "rounds", "0") == "0"
    assert get_value(p, "denoise.strategies", "-") == "-"


def test_stamps_change_only_for_the_edited_section(tmp_path):
    p = tmp_path / "pipe.py"
    p.write_text(PIPE)
    stamps = tmp_path / "stamps"
    first = write_section_stamps(p, stamps)
    assert {s.stem for s in first} == {
        "data",
        "proposals",
        "weak",
        "denoise",
        "strong",
        "fsd_config",
        "rescore_by_black_box",
        "evaluate",
        "report",
    }
    assert json.loads((stamps / "weak.json").read_text()) == {
        "config": "configs/cam/a.py",
        "seed": 0,
    }
    assert json.loads((stamps / "denoise.json").read_text()) is None  # section absent
    old = {s.name: s.stat().st_mtime_ns for s in stamps.iterdir()}
    for s in stamps.iterdir():  # make the old stamps clearly older
        os.utime(s, ns=(old[s.name] - 10**9, old[s.name] - 10**9))
    old = {s.name: s.stat().st_mtime_ns for s in stamps.iterdir()}
    assert write_section_stamps(p, stamps) == []  # unchanged file: nothing rewritten
    p.write_text(
        PIPE.replace('seed=0)\n"""', "").replace(
            "strong = dict(config='configs/faster_rcnn/b.py', seed=0)",
            "strong = dict(config='configs/faster_rcnn/b.py', seed=1)",
        )
    )
    changed = write_section_stamps(p, stamps)
    assert [s.name for s in changed] == ["strong.json"]
    new = {s.name: s.stat().st_mtime_ns for s in stamps.iterdir()}
    assert new["strong.json"] > old["strong.json"]
    assert all(new[k] == old[k] for k in new if k != "strong.json")


def test_module_cli_writes_stamps_and_prints_values(tmp_path):
    p = tmp_path / "pipe.py"
    p.write_text(PIPE)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "wsod.pipeline",
            str(p),
            "--stamps",
            str(tmp_path / "s"),
            "weak.config=-",
            "rounds=0",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["configs/cam/a.py", "0"]
    assert (tmp_path / "s" / "proposals.json").is_file()


def test_derived_value_reads_whether_the_weak_config_trains_on_proposals(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for config, expected in (
        ("configs/cam/cam_mobilenetv2_demo.py", "0"),
        ("configs/wsddn/wsddn_mobilenetv2_demo.py", "1"),
        ("configs/oicr/oicr_mobilenetv2_demo.py", "1"),
    ):
        p = tmp_path / "pipe.py"
        p.write_text(PIPE.replace("configs/cam/a.py", os.path.join(repo, config)))
        assert get_value(p, "weak.train_reads_proposals") == expected, config
    p.write_text(PIPE)  # config file missing: assume proposals are read (the safe order)
    assert get_value(p, "weak.train_reads_proposals") == "1"
