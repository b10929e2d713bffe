"""The commands' help examples name files that exist: the `wsod evaluate` / `wsod report`
examples use the paths a run really has, every example's config and pipeline is in the repository.

Before: they named `data/voc07/val_gt.json`, `work/metrics.json`, `pseudo_labels.json`, a
layout no run makes. Each path of the examples under `work_dirs/voc07_cpu/` must be one that
`make -n all` for that pipeline names.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("stage", ["evaluate", "report"])
def test_help_examples_name_paths_of_the_make_layout(stage, tmp_path):
    import importlib

    examples = importlib.import_module(f"wsod.commands.{stage}").EXAMPLES
    paths = set(re.findall(r"work_dirs/voc07_cpu/([\w./]+)", examples))
    assert paths, "the examples use the run layout"
    run = tmp_path / "voc07_cpu"
    out = subprocess.run(
        ["make", "-n", "all", "PIPELINE=pipelines/voc07_cpu.py", f"RUN={run}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    made = set(re.findall(rf"{re.escape(str(run))}/([\w./]+)", out))
    assert paths <= made, sorted(paths - made)


def test_help_examples_name_configs_and_pipelines_that_exist():
    """Every config and pipeline file a command's examples name is in the repository (a
    renamed config once left `wsod strong --help` naming a file that did not exist)."""
    import importlib
    import pkgutil

    import wsod.commands

    named = {}
    for info in pkgutil.iter_modules(wsod.commands.__path__):
        module = importlib.import_module(f"wsod.commands.{info.name}")
        for path in re.findall(
            r"(?<![\w/])((?:projects/[\w-]+/)?(?:configs|pipelines)/[\w./-]+\.py)",
            getattr(module, "EXAMPLES", ""),
        ):
            named.setdefault(path, info.name)
    assert named, "the examples name configs"
    missing = {path: command for path, command in named.items() if not (REPO / path).is_file()}
    assert not missing, missing
