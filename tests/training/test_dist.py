"""close_dist: the command's end destroys a started process group (gloo's threads stop before
the interpreter exits) and does nothing without one."""

from __future__ import annotations

import socket

import torch.distributed as torch_dist

from wsod.training.dist import close_dist


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
