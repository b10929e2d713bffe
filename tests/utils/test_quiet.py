"""Known-harmless library messages stay off the terminal and in the log file
(:mod:`wsod.utils.quiet`); every other line passes."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from wsod.utils.quiet import quiet_console

REPO = Path(__file__).resolve().parents[2]


def test_a_runner_logger_built_quietly_keeps_harmless_records_in_its_file_only(
    tmp_path, monkeypatch
):
    from mmengine.logging import MMLogger, print_log

    console = io.StringIO()
    monkeypatch.setattr(sys, "stdout", console)
    log_file = tmp_path / "run.log"
    with quiet_console():  # as wsod.training.flow builds its Runners
        logger = MMLogger.get_instance("quiet-test", log_file=str(log_file))
    # after the block, as during runner.train(): the optimizer constructor's warning
    print_log("backbone.conv_stem.weight is skipped since its requires_grad=False",
              logger="current", level=30)  # fmt: skip
    logger.info("paramwise_options -- backbone.blocks.5.0.conv_pw.weight:lr=0.001")
    logger.info("Config:\nmodel = dict(type='X')")
    logger.info("Hooks will be executed in the following order:\nbefore_run:\n(VERY_HIGH) X")
    logger.info(
        "Distributed training is not used, all SyncBatchNorm (SyncBN) layers in the model "
        "will be automatically reverted to BatchNormXd layers if they are used."
    )
    logger.info("Iter(train) [10/10]  lr: 1.0e-02  loss: 0.5")
    for handler in logger.handlers:
        handler.flush()
    shown = console.getvalue()
    assert "Iter(train) [10/10]" in shown
    assert "requires_grad=False" not in shown and "Config:" not in shown
    assert "Hooks will be executed" not in shown and "paramwise_options" not in shown
    assert "SyncBatchNorm" not in shown
    kept = log_file.read_text()
    assert "requires_grad=False" in kept and "Config:" in kept and "Iter(train)" in kept


def test_pkg_resources_warning_is_filtered_when_wsod_is_imported():
    # mmengine imports pkg_resources when a config's custom_imports are checked
    check = "from mmengine.utils import is_installed; is_installed('mmdet')"
    code = f"import wsod; {check}"
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "pkg_resources is deprecated" not in done.stderr
    # the same import without wsod's filter does warn: the test can fail
    plain = subprocess.run(
        [sys.executable, "-W", "default", "-c", check],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert "pkg_resources is deprecated" in plain.stderr
