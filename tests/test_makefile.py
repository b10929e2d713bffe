"""`make -n all` lists the stages in DAG order with file targets."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORDER = ["data", "proposals", "weak", "denoise", "strong", "evaluate", "report"]


def _dry_run(tmp_path, *extra):
    return subprocess.run(["make", "-n", "all", f"RUN={tmp_path}/run", *extra], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


def test_make_n_all_runs_stages_in_dag_order(tmp_path):
    out = _dry_run(tmp_path)
    stages = [m.group(1) for m in re.finditer(r"-m wsod (\w+)", out)]
    firsts = [s for i, s in enumerate(stages) if s not in stages[:i]]
    assert firsts == ORDER
    for target in ("data/train.json", "proposals/train.pkl", "proposals/val.pkl",
                   "weak/train_dets.json", "denoise/pseudo_train.json", "strong/val_dets.json",
                   "eval/metrics.json", "report"):
        assert f"{tmp_path}/run/{target}" in out


def test_make_reruns_only_what_changed(tmp_path):
    out = _dry_run(tmp_path)
    assert out.count("-m wsod data") == 1  # one recipe makes all split files (grouped target)
    assert out.count("-m wsod proposals") == 2  # train + val


def test_make_help_lists_public_targets():
    out = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    for t in ("setup", "test", "demo", "all", "bench", "lint", "clean", *ORDER):
        assert re.search(rf"\b{t}\b", out), t
