"""close_dist destroys a started process group (gloo's threads stop before the interpreter
tears down) and does nothing without one; setup_dist registers it for the exit when it starts a
group."""

from __future__ import annotations

import socket

import torch.distributed as torch_dist

from wsod.training import dist
from wsod.training.dist import close_dist, setup_dist


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_close_dist_destroys_a_started_group_and_is_a_no_op_without_one():
    close_dist()  # no group: nothing happens
    assert not torch_dist.is_initialized()
    torch_dist.init_process_group(
        backend="gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1
    )
    try:
        assert torch_dist.is_initialized()
        close_dist()
        assert not torch_dist.is_initialized()
    finally:
        if torch_dist.is_initialized():
            torch_dist.destroy_process_group()
    close_dist()  # twice: still nothing to do


def test_setup_dist_registers_the_teardown_only_when_it_starts_a_group(monkeypatch):
    registered = []
    monkeypatch.setattr(dist.atexit, "register", registered.append)
    monkeypatch.setattr(dist, "_cuda", lambda: False)
    setup_dist("none")
    assert registered == [] and not torch_dist.is_initialized()
    for key, value in {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
    }.items():  # what torchrun sets for one process
        monkeypatch.setenv(key, value)
    try:
        setup_dist("pytorch")
        assert torch_dist.is_initialized() and torch_dist.get_backend() == "gloo"
        assert registered == [close_dist]
        setup_dist("pytorch")  # already started: nothing started, nothing registered again
        assert registered == [close_dist]
        registered[0]()  # what the interpreter's exit runs
        assert not torch_dist.is_initialized()
    finally:
        if torch_dist.is_initialized():
            torch_dist.destroy_process_group()
