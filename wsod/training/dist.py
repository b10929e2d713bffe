"""Multi-process training through mmengine's launchers, on CPU (gloo) and GPU (nccl).

One code path for both: :func:`setup_dist` starts the process group once per process, before
the stage looks at its work dir (rank 0 moves stale checkpoints, the others wait), and registers
its teardown (:func:`close_dist`) for the interpreter's exit, and
:func:`fit_to_device` adds the launcher's settings to the config each ``Runner`` is built from
(after the run's fingerprint was taken: the number of processes does not change which run a
work dir holds). mmengine's ``Runner`` then finds the group started and uses it.

Launch (every rank runs the same command)::

    torchrun --nproc_per_node=N -m wsod weak --launcher pytorch ...   # one machine
    srun -p PARTITION -N NODES --ntasks-per-node=GPUS --gres=gpu:GPUS \\
        python -m wsod weak --launcher slurm ...                      # a slurm cluster

On a machine without CUDA the group uses gloo and the model is wrapped in
``MMDistributedDataParallel`` with ``device_ids=None`` (mmengine's launcher would call
``torch.cuda.set_device``, which fails without a GPU); with CUDA, mmengine's ``init_dist``
starts it with nccl. The slurm launcher needs CUDA (mmengine reads the GPU count).
"""

from __future__ import annotations

import atexit
from typing import Any

LAUNCHERS = ("none", "pytorch", "slurm", "mpi")
"""mmengine's launchers (``--launcher``)."""


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def setup_dist(
    launcher: str, *, error: type[Exception] = ValueError, dist_cfg: dict | None = None
) -> None:
    """Start this process's group for ``launcher`` unless it is ``none`` or already started.

    Args:
        launcher: ``none``, ``pytorch`` (torchrun), ``slurm`` (srun) or ``mpi``.
        error: raised for an unknown launcher, or ``slurm``/``mpi`` without CUDA.
        dist_cfg: the config's ``env_cfg.dist_cfg`` (mmengine's ``init_dist`` keywords, e.g.
            ``backend``, default nccl); used with CUDA. Without CUDA the backend is gloo.
    """
    if launcher not in LAUNCHERS:
        raise error(f"--launcher {launcher!r}: choose one of {', '.join(LAUNCHERS)}")
    from mmengine.dist import init_dist, is_distributed

    if launcher == "none" or is_distributed():
        return
    if _cuda():
        init_dist(launcher, **{"backend": "nccl", **dict(dist_cfg or {})})
    elif launcher != "pytorch":
        raise error(
            f"--launcher {launcher} needs CUDA GPUs; on CPUs run "
            "`torchrun --nproc_per_node=N -m wsod ... --launcher pytorch`"
        )
    else:
        import torch.distributed as torch_dist

        torch_dist.init_process_group(backend="gloo")  # torchrun's RANK, WORLD_SIZE, MASTER_*
    atexit.register(close_dist)


def close_dist() -> None:
    """Destroy this process's group if one was started (:func:`setup_dist` registers this for
    the interpreter's exit), so that gloo's threads stop before the interpreter tears down: left
    to the exit, a rank that finished its work can still abort ("terminate called without an
    active exception", seen under load). Nothing to do without a group."""
    from mmengine.dist import is_distributed

    if is_distributed():
        import torch.distributed as torch_dist

        torch_dist.destroy_process_group()


def fit_to_device(cfg: Any) -> None:
    """Add the started group's settings to a Runner config (in place): the backend in
    ``env_cfg.dist_cfg`` and, without CUDA, a CPU model wrapper (``device_ids=None``)."""
    from mmengine.dist import get_backend, is_distributed

    if cfg.get("launcher", "none") == "none" or not is_distributed():
        return
    env = dict(cfg.get("env_cfg") or {})
    env["dist_cfg"] = {**dict(env.get("dist_cfg") or {}), "backend": get_backend()}
    cfg.env_cfg = env
    if not _cuda():  # mmengine's default wrapper, on the CPU (it would pass LOCAL_RANK's GPU)
        wrapper = {
            "type": "MMDistributedDataParallel",
            "broadcast_buffers": False,
            "find_unused_parameters": cfg.get("find_unused_parameters", False),
            **dict(cfg.get("model_wrapper_cfg") or {}),
        }
        wrapper["device_ids"] = None
        cfg.model_wrapper_cfg = wrapper


def is_main() -> bool:
    """Whether this process writes artifacts: rank 0, or the only process."""
    from mmengine.dist import is_main_process

    return is_main_process()


def barrier() -> None:
    """Wait for every rank (no-op in a single process)."""
    from mmengine.dist import barrier as mm_barrier

    mm_barrier()


def broadcast(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank (``obj`` itself in a single process)."""
    from mmengine.dist import broadcast_object_list, is_distributed

    if not is_distributed():
        return obj
    box = [obj]
    broadcast_object_list(box, src=0)
    return box[0]
