"""Pipeline files: strict loading, values for the Makefile (vars.mk) and per-stage stamps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wsod.pipeline import load_pipeline, make_values, write_section_stamps, write_vars_mk

PIPE = """
run_name = 'x'
fsd = 1
data = dict(source='data/demo', format='demo')
proposals = dict(method='selective_search', max_boxes=500)
weak = dict(config='configs/cam/a.py', seed=0)
strong = dict(config='configs/faster_rcnn/b.py', seed=0)
"""


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
        "backbone_from_black_box",
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


def test_module_cli_writes_stamps_and_refuses_what_it_does_not_know(tmp_path):
    p = tmp_path / "pipe.py"
    p.write_text(PIPE)
    cmd = [sys.executable, "-m", "wsod.pipeline", str(p), "--stamps", str(tmp_path / "s")]
    subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    assert (tmp_path / "s" / "proposals.json").is_file()
    # the by-position KEY=DEFAULT reads are gone: the Makefile reads the named PIPE_* values
    done = subprocess.run([*cmd, "rounds=0"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "usage:" in done.stderr


def test_derived_value_reads_whether_the_weak_config_trains_on_proposals(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for config, expected in (
        ("configs/cam/cam_mobilenetv2_demo.py", "0"),
        ("projects/mil_baselines/configs/wsddn/wsddn_mobilenetv2_demo.py", "1"),
        ("projects/mil_baselines/configs/oicr/oicr_mobilenetv2_demo.py", "1"),
    ):
        p = tmp_path / "pipe.py"
        p.write_text(PIPE.replace("configs/cam/a.py", os.path.join(repo, config)))
        assert make_values(p)["PIPE_WEAK_TRAIN_READS_PROPOSALS"] == expected, config
    p.write_text(PIPE)  # config file missing: assume proposals are read (the safe order)
    assert make_values(p)["PIPE_WEAK_TRAIN_READS_PROPOSALS"] == "1"


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pipe(tmp_path, text, name="pipe.py"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_every_committed_pipeline_loads_and_gives_make_values():
    pipelines = sorted(Path(REPO, "pipelines").glob("*.py"))
    pipelines += sorted(Path(REPO).glob("projects/*/pipelines/*.py"))
    assert pipelines
    cwd = os.getcwd()
    os.chdir(REPO)  # pipelines name their configs relative to the repository
    try:
        for p in pipelines:
            assert load_pipeline(p)["weak"]["config"], p
            values = make_values(p.relative_to(REPO))
            assert values["PIPE_WEAK_CONFIG"] and os.path.isfile(values["PIPE_WEAK_CONFIG"]), p
            assert values["PIPE_FSD"] in ("0", "1"), p
            assert values["PIPE_RESCORE"] in ("off", "detections", "image"), p
    finally:
        os.chdir(cwd)


def test_misspelled_stage_key_is_an_error_naming_the_file_and_the_option(tmp_path):
    """Before: ``denoise = dict(strategy=[...])`` loaded, and denoise ran the default chain."""
    p = _pipe(tmp_path, "denoise = dict(strategy=[dict(type='top1')])\n", "typo.py")
    with pytest.raises(
        ValueError, match=r"typo\.py: denoise\.strategy .*did you mean 'strategies'"
    ):
        load_pipeline(p)
    p = _pipe(tmp_path, "weak = dict(confg='c.py', seed=0)\n", "typo2.py")
    with pytest.raises(ValueError, match=r"typo2\.py: weak\.confg .*did you mean 'config'"):
        load_pipeline(p)


def test_misspelled_section_is_an_error_naming_the_file_and_the_section(tmp_path):
    """Before: a section ``denoize`` was ignored."""
    p = _pipe(tmp_path, "denoize = dict(strategies=[dict(type='top1')])\n", "typo.py")
    with pytest.raises(ValueError, match=r"typo\.py: unknown section 'denoize'.*'denoise'"):
        load_pipeline(p)
    p = _pipe(tmp_path, "rescore_by_blackbox = 1\n", "typo2.py")
    with pytest.raises(ValueError, match=r"did you mean 'rescore_by_black_box'"):
        load_pipeline(p)
    p = _pipe(tmp_path, "strong = 'configs/x.py'\n", "flat.py")  # a section is a dict
    with pytest.raises(ValueError, match=r"flat\.py: 'strong' must be a dict"):
        load_pipeline(p)


def test_a_typo_in_an_inheriting_pipeline_is_caught_after_the_merge(tmp_path):
    """mmengine merges a child's ``denoise`` dict into the base's: the misspelled key stands
    beside the base's correct one and must still be refused."""
    base = f"{REPO}/pipelines/voc07_cpu.py"
    p = _pipe(tmp_path, f"_base_ = ['{base}']\ndenoise = dict(strategy=[dict(type='top1')])\n")
    with pytest.raises(ValueError, match="strategies"):
        load_pipeline(p)


def test_cli_refuses_a_pipeline_typo_before_running_the_stage(tmp_path, monkeypatch, capsys):
    """Before: exit 0 and the default chain; now exit 1, the stage is not reached."""
    import wsod.stages.denoise as denoise
    from wsod.cli import main

    called = []
    monkeypatch.setattr(denoise, "run", lambda *a, **k: called.append(1) or {})
    p = _pipe(tmp_path, "denoise = dict(strategy=[dict(type='top1')])\n", "typo.py")
    argv = ["denoise", "--pipeline", str(p), "--detections", "d", "--split", "s", "--out", "o"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "typo.py" in err and "strategies" in err and not called


def test_make_values_are_named_and_normalised(tmp_path):
    p = _pipe(tmp_path, PIPE.replace("fsd = 1", "fsd = True") + "rescore_by_black_box = True\n")
    values = make_values(p)
    assert values["PIPE_FILE"] == str(p) and str(p) in values["PIPE_SOURCES"].split()
    assert values["PIPE_WEAK_CONFIG"] == "configs/cam/a.py"
    assert values["PIPE_STRONG_CONFIG"] == "configs/faster_rcnn/b.py"
    assert values["PIPE_FSD_CONFIG"] == "configs/faster_rcnn/b.py"  # default: strong's
    assert values["PIPE_RESCORE"] == "detections"  # the older True / 1
    assert (values["PIPE_FSD"], values["PIPE_ROUNDS"]) == ("1", "0")
    assert values["PIPE_WEAK_TRAIN_READS_PROPOSALS"] == "1"  # config missing: the safe order
    p.write_text("fsd = False\nrescore_by_black_box = 0\nrounds = 2\nfsd_config = 'f.py'\n")
    values = make_values(p)
    assert (values["PIPE_FSD"], values["PIPE_ROUNDS"], values["PIPE_RESCORE"]) == ("0", "2", "off")
    assert values["PIPE_FSD_CONFIG"] == "f.py" and values["PIPE_WEAK_CONFIG"] == ""


def test_make_values_refuse_what_make_cannot_use(tmp_path):
    for text, message in (
        ("fsd = 2\n", "fsd = 2"),
        ("fsd = 'yes'\n", "fsd = 'yes'"),
        ("rounds = 10\n", "rounds = 10"),
        ("rounds = 1.5\n", "rounds = 1.5"),
        ("rescore_by_black_box = 'images'\n", "rescore_by_black_box = 'images'"),
    ):
        p = _pipe(tmp_path, text, "bad.py")
        with pytest.raises(ValueError, match=rf"bad\.py: {message}"):
            make_values(p)


def test_make_values_list_the_files_read_and_image_rescoring_needs_a_cam(tmp_path):
    cam = os.path.join(REPO, "configs/cam/cam_mobilenetv2_demo.py")
    base = _pipe(tmp_path, f"weak = dict(config='{cam}')\nrescore_by_black_box = 'image'\n", "b.py")
    child = _pipe(tmp_path, f"_base_ = ['{base}']\nfsd = 1\n", "c.py")
    values = make_values(child)
    sources = values["PIPE_SOURCES"].split()
    assert sources[:3] == [str(child), str(base), cam]
    assert any("_base_" in s for s in sources[3:]), "the weak config's own bases are listed"
    assert values["PIPE_RESCORE"] == "image" and values["PIPE_WEAK_TRAIN_READS_PROPOSALS"] == "0"
    assert "model.roi_head.scoring.type=image" in values["PIPE_IMAGE_SCORES_CFG_OPTIONS"]
    wsddn = os.path.join(REPO, "projects/mil_baselines/configs/wsddn/wsddn_mobilenetv2_demo.py")
    child.write_text(f"_base_ = ['{base}']\nweak = dict(config='{wsddn}')\n")
    with pytest.raises(ValueError, match=r"c\.py: rescore_by_black_box = 'image' .*'detections'"):
        make_values(child)


def test_vars_mk_is_rewritten_only_when_its_content_changes(tmp_path):
    p = _pipe(tmp_path, PIPE)
    out = tmp_path / "run" / ".pipeline" / "vars.mk"
    assert write_vars_mk(p, out)
    text = out.read_text()
    assert "PIPE_WEAK_CONFIG := configs/cam/a.py\n" in text and "PIPE_FSD := 1\n" in text
    assert not write_vars_mk(p, out) and out.read_text() == text
    p.write_text(PIPE.replace("seed=0)\n", "seed=1)\n"))  # strong's seed: no make value
    assert not write_vars_mk(p, out) and out.read_text() == text
    p.write_text(PIPE.replace("fsd = 1", "fsd = 0"))
    assert write_vars_mk(p, out)
    assert "PIPE_FSD := 0\n" in out.read_text()


def test_module_cli_writes_vars_mk_and_errors_in_one_line(tmp_path):
    p = _pipe(tmp_path, PIPE)
    out = tmp_path / "vars.mk"
    cmd = [sys.executable, "-m", "wsod.pipeline", str(p), "--vars-mk", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "PIPE_STRONG_CONFIG := configs/faster_rcnn/b.py" in out.read_text()
    p.write_text(PIPE + "strnog = dict(seed=1)\n")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        next(ln for ln in done.stderr.splitlines() if ln.startswith("wsod.pipeline: error:"))
    ]
    assert str(p) in done.stderr and "did you mean 'strong'" in done.stderr
