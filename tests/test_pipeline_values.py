"""The pipeline's up-front value check (``wsod.pipeline.check_values``, ``make``'s ``--check``)
and the quick look (``make all QUICK=1``).

Before: only section and key names were checked; a strategy ``type='top_1'``, a strong config
that does not exist or a misspelled ``cfg_options`` key passed and failed when their stage ran,
after the black box's training (about 2 h on VOC). Each case below is refused by the check,
naming the pipeline file, the key and the fix; no stage runs.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from wsod.pipeline import (
    QUICK_IMAGES,
    QUICK_ITERS,
    check_values,
    load_pipeline,
    quick_pipeline_text,
)

REPO = Path(__file__).resolve().parents[1]
CUSTOM = REPO / "pipelines/custom_example.py"


def _child(tmp_path: Path, text: str, name: str = "mine.py", base: Path = CUSTOM) -> Path:
    p = tmp_path / name
    p.write_text(f"_base_ = ['{base}']\n{text}")
    return p


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # pipelines name their configs relative to the repository


def test_every_committed_pipeline_passes_the_value_check():
    for p in sorted((REPO / "pipelines").glob("*.py")):
        assert check_values(p.relative_to(REPO))["weak"]["config"], p


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a de-noise strategy that is not registered, with its near match
        (
            "denoise = dict(strategies=[dict(type='top_1')])\n",
            r"denoise\.strategies: unknown de-noise strategy 'top_1'.*did you mean 'top1'",
        ),
        (
            "denoise = dict(strategies=[dict(type='image_filter', min_scor=0.2)])\n",
            r"denoise\.strategies: strategy 'image_filter': unknown parameters \['min_scor'\]",
        ),
        # a strategy's value, refused by the strategy itself (the chain runs on no boxes)
        (
            "denoise = dict(strategies=[dict(type='topk', k=0)])\n",
            r"denoise\.strategies: topk: k must be >= 1, got 0",
        ),
        # the CAM head's own options, checked by the head (WSODCAMHead.check_cfg)
        (
            "weak = dict(cfg_options={'model.roi_head.scoring.type': 'thresholdd'})\n",
            r"weak\.config = .*: model\.roi_head: .*thresholdd",
        ),
        # a strong config that does not exist, with the near file name
        (
            "strong = dict(config='configs/faster_rcnn/"
            "faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-psuedo_voc07-val.py')\n",
            r"strong\.config = .*psuedo.*: no such config file \(did you mean "
            r"'configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val",
        ),
        # a misspelled cfg_options key of the strong section (the CLI's rule)
        (
            "strong = dict(cfg_options={'model.test_cfg.rcnn.score_thrr': 0.0})\n",
            r"mine\.py: strong: --cfg-options model\.test_cfg\.rcnn\.score_thrr: .* has no key "
            r".*did you mean model\.test_cfg\.rcnn\.score_thr",
        ),
        # option types, ranges and choices as `wsod <stage>`'s parser has them
        ("weak = dict(max_iters=2.5)\n", r"weak\.max_iters = 2\.5: want a whole number"),
        ("strong = dict(max_iters=0)\n", r"strong\.max_iters = 0: want a value >= 1"),
        (
            "proposals = dict(mode='fats')\n",
            r"proposals\.mode = 'fats': not one of fast, quality \(did you mean 'fast'\?\)",
        ),
        ("data = dict(format='cvs')\n", r"data\.format = 'cvs': not one of .*'csv'"),
        ("predict = dict(draw_thr=3)\n", r"predict\.draw_thr = 3: want a value from 0 to 1"),
        ("fsd = 2\n", r"fsd = 2; want 0 or 1"),
        # the black box's phases: a schedule that ends before the affinity phase
        (
            "weak = dict(max_iters=10)\n",
            r"never trained.*--affinity-start-iter 8.*weak = dict\(max_iters=10, "
            r"affinity_start_iter=8\)",
        ),
        # a phase option for a one-phase black box
        (
            "weak = dict(config='configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py', "
            "affinity_start_iter=5)\n",
            r"affinity_start_iter=5: .* has no affinity phase",
        ),
        # run_name is read by nothing: refused when it differs from the file's name
        ("run_name = 'other'\n", r"run_name = 'other' is not read: .*work_dirs/mine"),
    ],
)
def test_a_wrong_value_is_refused_naming_the_file_and_the_fix(tmp_path, text, message):
    p = _child(tmp_path, text)
    load_pipeline(p)  # the names are right: only the values are wrong
    with pytest.raises(ValueError, match=message) as err:
        check_values(p)
    assert str(p) in str(err.value)


def test_an_unregistered_type_in_a_config_is_refused_with_its_key(tmp_path):
    """A registry typo inside the strong config (``model.roi_head.bbox_head.type``) fails only
    when the strong stage builds the model; the check looks every ``type`` up."""
    strong = (
        REPO / "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e_voc07-pseudo_voc07-val.py"
    )
    cfg = tmp_path / "strong_typo.py"
    cfg.write_text(
        f"_base_ = ['{strong}']\nmodel = dict(roi_head=dict(bbox_head=dict("
        "type='Shared2FCBBoxHaed')))\n"
    )
    p = _child(tmp_path, f"strong = dict(config='{cfg}')\n")
    with pytest.raises(
        ValueError,
        match=r"unknown type 'Shared2FCBBoxHaed' at model\.roi_head\.bbox_head "
        r"\(did you mean 'Shared2FCBBoxHead'\?\)",
    ):
        check_values(p)
    # the weak config's types too, e.g. a hook
    weak = REPO / "configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py"
    cfg.write_text(
        f"_base_ = ['{weak}']\ncustom_hooks = [dict(type='CheckInvalidLossHook'), "
        "dict(type='WSODAffinityPhaseHok', start_iter=4000)]\n"
    )
    p = _child(tmp_path, f"weak = dict(config='{cfg}')\n", "mine2.py")
    with pytest.raises(ValueError, match=r"'WSODAffinityPhaseHok' at custom_hooks\.1 .*PhaseHook"):
        check_values(p)


def test_named_phase_option_passes_where_the_raw_key_was_needed(tmp_path):
    p = _child(tmp_path, "weak = dict(max_iters=10, affinity_start_iter=8)\n")
    assert check_values(p)["weak"]["affinity_start_iter"] == 8
    p = _child(tmp_path, "weak = dict(max_iters=10, affinity_start_iter=10)\n", "late.py")
    with pytest.raises(ValueError, match="start_iter 10 >= max_iters 10"):
        check_values(p)


def _make(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "WSOD_JOBS_DIR": ""}
    return subprocess.run(
        ["make", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=check,
        env=env,
        timeout=300,
    )


def test_make_refuses_a_wrong_value_before_any_stage(tmp_path):
    """`make all` (and `make -n all`) stop at the pipeline check: no stage command is run or
    printed, nothing of the run is written but the check's folder."""
    p = _child(tmp_path, "denoise = dict(strategies=[dict(type='top_1')])\n")
    run = tmp_path / "run"
    for args in (("-n", "all"), ("all",)):
        done = _make(*args, f"PIPELINE={p}", f"RUN={run}", check=False)
        assert done.returncode != 0
        assert f"{p}: denoise.strategies: unknown de-noise strategy 'top_1'" in done.stderr
        assert "did you mean 'top1'" in done.stderr
        assert "-m wsod data" not in done.stdout
        assert not (run / ".pipeline" / "vars.mk").exists()
        assert not [f for f in run.rglob("*") if ".pipeline" not in f.parts]


def test_quick_look_pipeline_shrinks_every_stage_of_any_pipeline(tmp_path):
    text = quick_pipeline_text(CUSTOM)
    quick = tmp_path / "quick.py"
    quick.write_text(text)
    pipe = check_values(quick, CUSTOM)
    assert pipe["data"]["limit"] == QUICK_IMAGES and pipe["data"]["format"] == "csv"
    assert pipe["weak"]["max_iters"] == QUICK_ITERS
    assert pipe["weak"]["affinity_start_iter"] == QUICK_ITERS * 4 // 5  # two-phase black box
    assert pipe["strong"]["max_iters"] == QUICK_ITERS
    assert pipe["proposals"]["max_boxes"] < load_pipeline(CUSTOM)["proposals"]["max_boxes"]
    # a one-phase black box gets max_iters alone
    one = _child(
        tmp_path,
        "weak = dict(config='configs/cam/cam_mobilenetv2_4k_voc07-train_voc07-val.py')\n",
    )
    quick.write_text(quick_pipeline_text(one))
    pipe = check_values(quick, one)
    assert "affinity_start_iter" not in pipe["weak"] and pipe["weak"]["max_iters"] == QUICK_ITERS


def test_make_quick_has_its_own_run_folder_and_every_stage_reads_the_quick_pipeline(tmp_path):
    mine = tmp_path / "mine.py"
    # a copy, as the README says (outside pipelines/, its relative _base_ made absolute)
    base = str(REPO / "pipelines" / "voc07_cpu.py")
    mine.write_text(CUSTOM.read_text().replace("./voc07_cpu.py", base))
    out = _make("-n", "all", f"PIPELINE={mine}", "QUICK=1").stdout
    run = REPO / "work_dirs" / "mine_quick"
    try:
        quick = run / ".pipeline" / "quick.py"
        assert quick.is_file() and f"_base_ = ['{mine}']" in quick.read_text()
        stages = re.findall(r"-m wsod (\w+) --pipeline (\S+)", out)
        assert {s for s, _ in stages} >= {"data", "proposals", "weak", "denoise", "strong"}
        assert {p for _, p in stages} == {str(quick.relative_to(REPO))}
        assert "--out-dir work_dirs/mine_quick/report" in out
        # the full run keeps its own folder and reads the pipeline itself
        full = _make("-n", "all", f"PIPELINE={mine}", f"RUN={tmp_path}/full").stdout
        assert f"--pipeline {mine}" in full and "quick.py" not in full
    finally:
        import shutil

        shutil.rmtree(run, ignore_errors=True)


def test_make_help_names_the_variables_a_user_sets():
    out = _make("help").stdout
    for name in ("PIPELINE=", "DATA_ROOT=", "RUN=", "QUICK=1", "FSD=", "ROUNDS=", "IMAGES="):
        assert name in out, name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("weak = dict(max_iters='2000')\n", r"weak\.max_iters = '2000': want a whole number"),
        (
            "weak = dict(max_iters=100, affinity_start_iter=100)\n",
            "start_iter 100 >= max_iters 100",
        ),
    ],
)
def test_the_quick_look_checks_the_users_pipeline_first(tmp_path, text, message):
    """Before: under QUICK=1 the quick overlay replaced max_iters and affinity_start_iter before
    the check, so these wrong values passed and the quick look exited 0; errors named the
    generated .pipeline/quick.py. Now the user's file is checked as written first, by
    `python -m wsod.pipeline --quick --check` (what make runs): refused, naming it, and no
    quick pipeline, stamp or make fragment is written."""
    from wsod.pipeline.__main__ import main

    p = _child(tmp_path, text)
    stamps = tmp_path / "run" / ".pipeline"
    quick = stamps / "quick.py"
    argv = [str(p), "--quick", str(quick), "--check", "--stamps", str(stamps)]
    with pytest.raises(SystemExit) as err:
        main([*argv, "--vars-mk", str(stamps / "vars.mk")])
    assert re.search(message, str(err.value)) and f"{p}: " in str(err.value)
    assert "quick.py" not in str(err.value)
    assert not stamps.exists()
    # the quick overlay itself is still valid: it is the user's value that is refused
    quick.parent.mkdir(parents=True)
    quick.write_text(quick_pipeline_text(p))
    assert check_values(quick, p)["weak"]["max_iters"] == QUICK_ITERS


def test_make_quick_refuses_the_users_wrong_value(tmp_path):
    """`make all QUICK=1` over a pipeline with a wrong value the overlay replaces: refused
    before any stage, the message names the user's file."""
    p = _child(tmp_path, "weak = dict(max_iters='2000')\n")
    done = _make("-n", "all", f"PIPELINE={p}", f"RUN={tmp_path}/run", "QUICK=1", check=False)
    assert done.returncode != 0
    assert f"{p}: weak.max_iters = '2000': want a whole number" in done.stderr
    assert "-m wsod data" not in done.stdout


def test_an_error_of_the_quick_look_itself_names_both_files(tmp_path, monkeypatch):
    """A value only the quick look makes wrong is named as the quick look of the user's file."""
    import wsod.pipeline.__main__ as entry

    p = _child(tmp_path, "")
    quick = tmp_path / "run" / ".pipeline" / "quick.py"
    real = entry.write_quick_pipeline

    def broken(path, out):  # a quick look that breaks a rule
        out = real(path, out)
        out.write_text(out.read_text() + "fsd = 2\n")
        return out

    monkeypatch.setattr(entry, "write_quick_pipeline", broken)
    with pytest.raises(SystemExit) as err:
        entry.main([str(p), "--quick", str(quick), "--check", "--stamps", str(quick.parent)])
    assert f"the quick look of {p} ({quick}, generated): {quick}: fsd = 2" in str(err.value)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("topl", "top1"), ("topI", "top1"), ("top_1", "top1"), ("tpok", "topk"), ("rnist", "mist")],
)
def test_a_near_name_weighs_look_alike_characters(tmp_path, typed, meant):
    """Before: `topl` got "did you mean 'topk'?" (both one edit away; difflib breaks the tie by
    the larger string). `l` for `1` is a slip of shape, so `top1` is suggested now."""
    p = _child(tmp_path, f"denoise = dict(strategies=[dict(type='{typed}')])\n")
    with pytest.raises(ValueError, match=rf"did you mean '{meant}'\?"):
        check_values(p)
