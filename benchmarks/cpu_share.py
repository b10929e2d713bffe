"""Two trainings at once on one machine: is ``make -j2`` worth it, and why the CPU slots?

Runs the same short strong-stage training (``wsod strong --max-iters N``) three ways and prints
seconds per iteration from mmengine's log (timestamps of the first and last logged iteration,
so start-up and the first iterations are left out):

* ``alone``: one training, PyTorch's default threads (all cores);
* ``shared``: two at once with ``$WSOD_JOBS_DIR`` set, as ``make -j2`` runs them (each holds a
  CPU slot and uses cores / 2 threads, :mod:`wsod.utils.cpu_share`);
* ``oversubscribed`` (``--oversubscribed``): two at once without slots, each with the default
  threads (what ``make -j2`` did before the slots).

Throughput is iterations per second of all trainings together, relative to ``alone``. Nothing
else should run on the machine meanwhile.

Usage::

    .venv/bin/python benchmarks/cpu_share.py --pipeline pipelines/voc07_cpu.py \\
        --pseudo-labels work_dirs/voc07_cpu/denoise/pseudo_train.json --iters 150
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ITER = re.compile(
    r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) - mmengine - INFO - Iter\(train\) \[\s*(\d+)/"
)


def seconds_per_iter(work_dir: Path) -> float:
    """From the run's mmengine log: (last - first logged time) / (last - first iteration)."""
    logs = sorted(work_dir.glob("2*/2*.log"))
    if not logs:
        raise SystemExit(f"{work_dir}: no mmengine log; see {work_dir}.out")
    points = []
    for line in logs[-1].read_text().splitlines():
        m = ITER.match(line)
        if m:
            points.append((datetime.strptime(m[1], "%Y/%m/%d %H:%M:%S"), int(m[2])))
    if len(points) < 2:
        raise SystemExit(f"{logs[-1]}: fewer than two logged iterations; raise --iters")
    (t0, i0), (t1, i1) = points[0], points[-1]
    return (t1 - t0).total_seconds() / (i1 - i0)


def launch(args, work_dir: Path, seed: int, jobs_dir: str) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "wsod",
        "strong",
        "--pipeline",
        args.pipeline,
        "--pseudo-labels",
        args.pseudo_labels,
        "--max-iters",
        str(args.iters),
        "--seed",
        str(seed),
        "--no-resume",
        "--work-dir",
        str(work_dir),
    ]
    env = {**os.environ, "WSOD_JOBS_DIR": jobs_dir}
    with open(f"{work_dir}.out", "w") as out:  # the child keeps its own copy of the handle
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def run_case(args, root: Path, name: str, n: int, jobs_dir: str) -> list[float]:
    procs = [
        (root / f"{name}{i}", launch(args, root / f"{name}{i}", i, jobs_dir)) for i in range(n)
    ]
    for work_dir, proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"{name}: training failed, see {work_dir}.out")
    return [seconds_per_iter(work_dir) for work_dir, _ in procs]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default="pipelines/voc07_cpu.py")
    p.add_argument("--pseudo-labels", default="work_dirs/voc07_cpu/denoise/pseudo_train.json")
    p.add_argument("--iters", type=int, default=150, help="training iterations per run [150]")
    p.add_argument(
        "--oversubscribed",
        action="store_true",
        help="also run two at once without slots (slow: 6.6x per iteration measured on 2 cores)",
    )
    p.add_argument("--work-dir", help="keep the runs here [a temporary folder]")
    args = p.parse_args()
    if not Path(args.pseudo_labels).is_file():
        raise SystemExit(
            f"{args.pseudo_labels}: no such file; run `make denoise ...` first or "
            "pass --pseudo-labels"
        )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.work_dir or tmp)
        root.mkdir(parents=True, exist_ok=True)
        cases = [("alone", 1, ""), ("shared", 2, str(root / "jobs"))]
        if args.oversubscribed:
            cases.append(("oversubscribed", 2, ""))
        print(
            f"strong training, {args.iters} iterations per run, {os.cpu_count()} CPUs "
            f"({args.pipeline}, {args.pseudo_labels})"
        )
        base = None
        for name, n, jobs_dir in cases:
            secs = run_case(args, root, name, n, jobs_dir)
            rate = sum(1 / s for s in secs)
            base = base or rate
            print(
                f"  {name:15s} {n} at once: s/iter "
                + " ".join(f"{s:.3f}" for s in secs)
                + f" | throughput {rate:.2f} it/s = {rate / base:.2f}x alone"
            )


if __name__ == "__main__":
    main()
