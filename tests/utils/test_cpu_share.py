"""CPU sharing between wsod jobs run at once: slots, live-job count, the Runner hook."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from wsod import training as rn
from wsod.utils import cpu_share


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout)


@pytest.fixture
def other_job():
    """A live process other than this one (a sleeping child), killed after the test."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_slot_registers_this_process_and_leaves(tmp_path):
    jobs = tmp_path / "jobs"
    with cpu_share.slot(jobs) as path:
        assert path == jobs / str(os.getpid()) and path.is_file()
        assert cpu_share.live_jobs(jobs) == 1
    assert not path.exists() and cpu_share.live_jobs(jobs) == 0


def test_live_jobs_counts_live_processes_and_removes_dead_ones(tmp_path, other_job):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / str(other_job.pid)).write_text("")
    dead = jobs / str(_dead_pid())
    dead.write_text("")
    (jobs / "notes.txt").write_text("")  # not a slot
    assert cpu_share.live_jobs(jobs) == 1
    assert not dead.exists()
    with cpu_share.slot(jobs):
        assert cpu_share.live_jobs(jobs) == 2


def test_fair_threads_splits_the_cores_never_above_the_default(tmp_path, other_job):
    jobs = tmp_path / "jobs"
    assert cpu_share.fair_threads(jobs, total=8, default=8) == 8  # nobody registered
    with cpu_share.slot(jobs):
        assert cpu_share.fair_threads(jobs, total=8, default=8) == 8  # alone
        (jobs / str(other_job.pid)).write_text("")
        assert cpu_share.fair_threads(jobs, total=8, default=8) == 4
        assert cpu_share.fair_threads(jobs, total=8, default=3) == 3
        assert cpu_share.fair_threads(jobs, total=1, default=2) == 1  # at least one thread


def test_sharing_is_off_without_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(cpu_share.ENV, raising=False)
    assert cpu_share.jobs_dir() is None and cpu_share.live_jobs() == 0
    with cpu_share.slot() as path:
        assert path is None
    monkeypatch.setenv(cpu_share.ENV, str(tmp_path / "jobs"))
    assert cpu_share.jobs_dir() == tmp_path / "jobs"


def test_hook_lowers_threads_while_another_job_runs_and_restores_them(tmp_path, other_job):
    from wsod.models.cpu_share_hook import WSODCPUShareHook

    default = torch.get_num_threads()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / str(other_job.pid)).write_text("")
    runner = SimpleNamespace(iter=0, logger=logging.getLogger("test_cpu_share"))
    hook = WSODCPUShareHook(interval=2, jobs_dir=str(jobs))
    try:
        hook.before_run(runner)
        assert cpu_share.live_jobs(jobs) == 2  # this process holds a slot while it runs
        expect = max(1, min(default, cpu_share.cores() // 2))
        assert torch.get_num_threads() == expect
        other_job.kill()
        other_job.wait()
        runner.iter = 1  # not a multiple of the interval: no re-count yet
        hook.before_train_iter(runner, 1)
        assert torch.get_num_threads() == expect
        runner.iter = 2
        hook.before_train_iter(runner, 2)
        assert torch.get_num_threads() == default  # alone again
        (jobs / str(os.getppid())).write_text("")  # a live process joins (pytest's parent)
        hook.before_test_iter(runner, 0)
        assert torch.get_num_threads() == expect
        hook.after_run(runner)
        assert torch.get_num_threads() == default
        assert not (jobs / str(os.getpid())).exists()
    finally:
        torch.set_num_threads(default)


def test_runner_configs_get_the_hook_only_when_sharing_is_on(tmp_path, monkeypatch):
    from mmengine.config import Config

    cfg = Config(dict(custom_hooks=[dict(type="WSODFiniteLossHook", interval=1)]))
    monkeypatch.delenv(cpu_share.ENV, raising=False)
    rn.add_cpu_share_hook(cfg)
    assert [h["type"] for h in cfg.custom_hooks] == ["WSODFiniteLossHook"]
    monkeypatch.setenv(cpu_share.ENV, str(tmp_path / "jobs"))
    rn.add_cpu_share_hook(cfg)
    rn.add_cpu_share_hook(cfg)  # once only
    assert [h["type"] for h in cfg.custom_hooks] == ["WSODFiniteLossHook", "WSODCPUShareHook"]
    empty = Config(dict())
    rn.add_cpu_share_hook(empty)
    assert [h["type"] for h in empty.custom_hooks] == ["WSODCPUShareHook"]


def test_a_new_slot_folder_is_shared_by_every_user(tmp_path):
    """The Makefile's folder is one per machine: created writable for all, sticky as /tmp."""
    jobs = tmp_path / "machine" / "jobs"
    with cpu_share.slot(jobs):
        assert jobs.stat().st_mode & 0o7777 == 0o1777


def test_another_users_stale_slot_and_an_unwritable_folder_do_not_stop_a_stage(
    tmp_path, monkeypatch
):
    """In a shared sticky folder another user's stale slot cannot be removed, and a folder this
    process cannot write to must not fail the stage: the first is skipped, the second turns
    sharing off for this process with a warning naming the folder and the fix."""
    from pathlib import Path

    jobs = tmp_path / "jobs"
    jobs.mkdir()
    stale = jobs / str(_dead_pid())
    stale.write_text("")
    real_unlink = Path.unlink

    def foreign(self, missing_ok=False):
        if self == stale:
            raise PermissionError(1, "Operation not permitted", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", foreign)
    assert cpu_share.live_jobs(jobs) == 0 and stale.exists()
    blocked = tmp_path / "a_file"
    blocked.write_text("")  # a folder under a file cannot be made, as one without write access
    where = re.escape(str(blocked / "jobs"))
    with pytest.warns(UserWarning, match=rf"CPU sharing off .*{where}.*WSOD_JOBS_DIR"):
        with cpu_share.slot(blocked / "jobs") as path:
            assert path is None


def test_shared_threads_splits_the_cores_for_a_stage_outside_a_runner(tmp_path, other_job):
    """`wsod predict` beside a running stage: half the cores while it detects, then back."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / str(other_job.pid)).write_text("")
    before = torch.get_num_threads()
    try:
        with cpu_share.shared_threads(jobs) as n:
            assert n == max(1, min(before, cpu_share.cores() // 2))
            assert torch.get_num_threads() == n and cpu_share.live_jobs(jobs) == 2
        assert torch.get_num_threads() == before and cpu_share.live_jobs(jobs) == 1
    finally:
        torch.set_num_threads(before)
