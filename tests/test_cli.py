"""The CLI: one program for `wsod` and `python -m wsod`, every stage reachable, errors in one line.

Each stage's own test module also proves that its subcommand reaches its ``run``.
"""

import importlib
import subprocess
import sys

import pytest

from wsod.cli import STAGES, build_parser, main


def test_python_m_wsod_lists_every_stage():
    out = subprocess.run(
        [sys.executable, "-m", "wsod", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    for stage in STAGES:
        assert stage in out


@pytest.mark.parametrize("stage", STAGES)
def test_stage_help_has_examples(stage, capsys):
    with pytest.raises(SystemExit) as e:
        main([stage, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--pipeline" in out
    assert f"wsod {stage}" in out, "the epilog shows real example command lines"


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_calls_its_run(stage):
    cmd = importlib.import_module(f"wsod.commands.{stage}")
    for name in ("HELP", "EXAMPLES", "OPTIONS", "add_arguments", "execute"):
        assert hasattr(cmd, name), f"wsod.commands.{stage} lacks {name}"
    stage_mod = importlib.import_module(f"wsod.stages.{stage}")
    assert callable(stage_mod.run)
    assert build_parser()  # every subparser builds


def test_errors_are_one_line_and_exit_1(tmp_path, capsys):
    rc = main(
        [
            "evaluate",
            "--gt",
            str(tmp_path / "missing_gt.json"),
            "--detections",
            f"weak={tmp_path / 'missing.json'}",
            "--out",
            str(tmp_path / "m.json"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert len(err.splitlines()) == 1
    assert err.startswith("wsod evaluate: error:") and "missing" in err


def test_pipeline_fills_options_not_given(tmp_path, monkeypatch):
    import wsod.stages.denoise as denoise

    seen = {}
    monkeypatch.setattr(denoise, "run", lambda *a, **k: seen.update(k, args=a) or {})
    pipe = tmp_path / "p.py"
    pipe.write_text("denoise = dict(min_score=0.25, out='from_pipeline.json')\n")
    rc = main(
        [
            "denoise",
            "--pipeline",
            str(pipe),
            "--detections",
            "d.json",
            "--split",
            "s.json",
            "--out",
            "given.json",
        ]
    )
    assert rc == 0
    flat = {**seen, **dict(enumerate(seen.pop("args")))}
    assert 0.25 in flat.values(), "pipeline value used for an option not given"
    assert "given.json" in map(str, flat.values()), "command line wins over the pipeline"


def test_pipeline_cfg_options_merge_with_the_command_line(tmp_path, monkeypatch):
    import wsod.stages.weak as weak

    seen = {}
    monkeypatch.setattr(weak, "run", lambda *a, **k: seen.update(k) or {})
    pipe = tmp_path / "p.py"
    pipe.write_text("weak = dict(config='c.py', cfg_options={'a.b': 1, 'model.x': 'pipeline'})\n")
    argv = ["weak", "--pipeline", str(pipe), "--work-dir", str(tmp_path / "w")]
    assert main([*argv, "--cfg-options", "model.x=cli", "c=3"]) == 0
    assert seen["options"].cfg_options == {"a.b": 1, "model.x": "cli", "c": 3}
    assert main(argv) == 0
    assert seen["options"].cfg_options == {"a.b": 1, "model.x": "pipeline"}


@pytest.mark.parametrize("stage", STAGES)
def test_each_option_is_declared_once_and_is_a_parameter_of_run(stage):
    """Option names live in `OPTIONS` only: every dest reaches `run` under its own name,
    as a parameter or a field of its options dataclass (weak's --no-infer is read by `execute`
    itself; its import options go to `import_detections`)."""
    import inspect
    import typing

    from wsod.commands import stage_options

    module = importlib.import_module(f"wsod.stages.{stage}")
    params = set(inspect.signature(module.run).parameters)
    if "options" in params:  # a training stage: the fields of its options dataclass
        options_class = typing.get_type_hints(module.run)["options"].__args__[0]
        params |= set(options_class.names())
    handled_by_execute = {"no_infer"} if stage == "weak" else set()
    if stage == "weak":  # --import: its own function
        params |= set(inspect.signature(module.import_detections).parameters)
    assert set(stage_options(stage)) - params == handled_by_execute


def test_every_option_given_reaches_run_under_its_name(tmp_path, monkeypatch):
    import wsod.stages.proposals as proposals

    seen = {}
    monkeypatch.setattr(proposals, "run", lambda *a, **k: seen.update(k, args=a) or {})
    argv = ["proposals", "--split", "s.json", "--out", "o.pkl", "--max-boxes", "5"]
    assert main([*argv, "--method", "whole_image", "--allow-pickle", "--seed", "3"]) == 0
    assert seen == {
        "args": ("s.json", "o.pkl"),
        "max_boxes": 5,
        "method": "whole_image",
        "allow_pickle": True,
        "seed": 3,
    }


# A command whose DataLoader iterator is collected (as after a training loop's last step, when
# the strong stage has written its last checkpoint) while Ctrl-C arrives: the interrupt lands
# inside the iterator's __del__, which joins its worker processes.
_CTRL_C_IN_FINALIZER = """
import os, signal, sys, time
# Ctrl-C as in a terminal: a shell's background job (`make test &`) inherits SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter as Iter
import wsod.commands.report as command
from wsod.cli import main

shutdown = Iter._shutdown_workers

def ctrl_c_while_joining(self):  # what __del__ calls: Ctrl-C arrives while it joins
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    finally:
        shutdown(self)

def execute(args):
    it = iter(DataLoader(list(range(8)), batch_size=2, num_workers=1))
    next(it)
    Iter._shutdown_workers = ctrl_c_while_joining
    del it  # the last reference: __del__ runs here, and the interrupt with it
    Iter._shutdown_workers = shutdown
    for _ in range(100):  # the stage's next steps (detection on val, ...)
        time.sleep(0.01)
    print("went on after Ctrl-C")
    return 0

command.execute = execute
sys.exit(main(["report"]))
"""


def test_ctrl_c_inside_a_dataloader_finalizer_stops_in_one_line():
    """Before: Ctrl-C just after the strong stage's last checkpoint printed a 17-line
    traceback ("Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__>") and
    the stage went on. Now it stops the command with the CLI's one line and exit code 130."""
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_FINALIZER],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "went on" not in done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.strip() == "wsod report: interrupted; rerun the same command to resume"
