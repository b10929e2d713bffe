"""bf16 autocast against fp32, stage by stage, on the real VOC images (``--precision``).

For each case it runs the real stage command a few iterations (``--max-iters N``) in fp32 and
in bf16, alternating the two ``--rounds`` times so that a load that drifts hits both alike,
and prints seconds per training iteration from mmengine's log (first to last logged iteration:
start-up left out), seconds per detected image (the test loop's logged ``time``) and the
process's peak memory (``ru_maxrss`` of the child). It first names the CPU (model, the flags that
decide bf16's speed: AVX-512, VNNI, AVX512_BF16, AMX; cores) and what ``--precision auto``
picks on it (:mod:`wsod.training.precision`):

* ``strong``: the pipeline's strong config trained on the train split's real boxes (the
  reference's inputs; the cost per iteration does not depend on where the boxes come from),
  then detection on ``--images`` val images;
* ``weak``: the black box's classifier phase (``--classifier-config``: the weak config's base,
  without the affinity phase), then its affinity phase (``WSODAffinityPhaseHook`` from iteration 0), then
  detection on ``--images`` val images with selective-search proposals (the walk included).

Accuracy is not measured here (a few iterations say nothing about mAP); the VOC runs in
docs/experiments/ do that. Ideally nothing else runs meanwhile; beside other wsod jobs, set the
same ``$WSOD_JOBS_DIR`` so each run takes its share of the cores (as under ``make -j2``). The
ratio bf16 / fp32 is the number to read.

Usage::

    .venv/bin/python benchmarks/bench_precision.py --data work_dirs/voc07_cpu/data \\
        --iters 40 --rounds 2 --images 40
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_share import ITER  # noqa: E402

from wsod.utils.cpu import describe  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TEST_TIME = re.compile(r"Iter\(test\) \[\s*\d+/\d+\].*?\btime: ([0-9.]+)")
PRECISIONS = ("fp32", "bf16")


def run(cmd: list[str], log: Path) -> float:
    """Run ``python -m wsod ...`` (its output in ``log``); returns its peak RSS in MB."""
    if "--work-dir" in cmd:
        shutil.rmtree(cmd[cmd.index("--work-dir") + 1], ignore_errors=True)
    # $WSOD_JOBS_DIR as set: alone, all cores; beside other wsod jobs, its share of them
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wsod", *cmd], cwd=REPO, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: wsod {' '.join(cmd)}; see {log}")
    return usage.ru_maxrss / 1024


def seconds_per_iter(work_dir: Path) -> float:
    """(last - first logged training time) / (last - first iteration), from the training
    run's mmengine log (the detection Runner writes a log folder of its own)."""
    from datetime import datetime

    for log in sorted(work_dir.glob("2*/2*.log"), reverse=True):
        points = [
            (datetime.strptime(m[1], "%Y/%m/%d %H:%M:%S"), int(m[2]))
            for m in map(ITER.match, log.read_text().splitlines())
            if m
        ]
        if len(points) >= 2:
            (t0, i0), (t1, i1) = points[0], points[-1]
            return (t1 - t0).total_seconds() / (i1 - i0)
    raise SystemExit(f"{work_dir}: no log with two training iterations; raise --iters")


def seconds_per_image(log: Path) -> float:
    """The test loop's last logged ``time`` (mmengine's mean over its window)."""
    times = TEST_TIME.findall(log.read_text())
    if not times:
        raise SystemExit(f"{log}: no test iterations logged")
    return float(times[-1])


def subset(split: Path, n: int, out: Path) -> Path:
    data = json.loads(split.read_text())
    data["images"] = data["images"][:n]
    data["info"] = {**data.get("info", {}), "num_images": len(data["images"])}
    out.write_text(json.dumps(data))
    return out


def log_every(args) -> str:
    """mmengine logs every ``interval`` iterations: often enough for two points per run."""
    return f"default_hooks.logger.interval={max(1, args.iters // 8)}"


def strong_case(args, root: Path, precision: str, rnd: int) -> dict:
    work = root / f"strong_{precision}_{rnd}"
    common = ["--config", args.strong_config, "--seed", "0", "--precision", precision]
    train = ["strong", *common, "--fully-supervised-gt", str(args.data / "train_gt.json")]
    mem = run([*train, "--work-dir", str(work), "--max-iters", str(args.iters), "--no-resume",
               "--cfg-options", log_every(args), "--infer", f"{args.val}:{work}/val_dets.json"], Path(f"{work}.log"))  # fmt: skip
    return {"train": seconds_per_iter(work), "detect": seconds_per_image(Path(f"{work}.log")),
            "mem": mem}  # fmt: skip


def weak_case(args, root: Path, precision: str, rnd: int) -> dict:
    work = root / f"weak_{precision}_{rnd}"
    base = ["weak", "--config", args.weak_config, "--seed", "0", "--precision", precision,
            "--train-split", str(args.data / "train.json"), "--no-resume"]  # fmt: skip
    phase = f"custom_hooks.{args.phase_hook_index}.start_iter"
    cls_dir, aff_dir = Path(f"{work}_cls"), Path(f"{work}_aff")
    cls = [*base[:2], args.classifier_config, *base[3:]]
    mem = run([*cls, "--work-dir", str(cls_dir), "--max-iters", str(args.iters), "--no-infer",
               "--cfg-options", log_every(args)], Path(f"{cls_dir}.log"))  # fmt: skip
    mem = max(mem, run([*base, "--work-dir", str(aff_dir), "--max-iters", str(args.iters),
                        "--cfg-options", f"{phase}=0", log_every(args),
                        "--infer", f"{args.val}:{args.val_props}:{aff_dir}/val_dets.json"],
                       Path(f"{aff_dir}.log")))  # fmt: skip
    return {"train": seconds_per_iter(cls_dir), "affinity": seconds_per_iter(aff_dir),
            "detect": seconds_per_image(Path(f"{aff_dir}.log")), "mem": mem}  # fmt: skip


def report(name: str, results: dict[str, list[dict]]) -> None:
    keys = [k for k in results["fp32"][0] if k != "mem"]
    print(f"{name}:")
    for key in keys:
        med = {p: statistics.median(r[key] for r in results[p]) for p in PRECISIONS}
        unit = "s/image" if key == "detect" else "s/iter"
        print(f"  {key:9s} fp32 {med['fp32']:.3f} {unit}, bf16 {med['bf16']:.3f} {unit}: "
              f"bf16 = {med['fp32'] / med['bf16']:.2f}x the fp32 rate")  # fmt: skip
    for p in PRECISIONS:
        print(f"  peak memory {p}: {max(r['mem'] for r in results[p]):.0f} MB")


def auto_choice() -> str:
    """What ``--precision auto`` picks here by the CPU's flags (a calibration is the stage's)."""
    from wsod.training.precision import choose_precision

    choice = choose_precision("auto")
    return f"{choice.precision} ({choice.why})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("work_dirs/voc07_cpu/data"),
                   help="the VOC run's data folder (`make data ...`)")  # fmt: skip
    p.add_argument("--strong-config",
                   default="configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-4e-bg03_voc07-pseudo_voc07-val.py")  # fmt: skip
    p.add_argument("--weak-config",
                   default="configs/cam/cam_efficientnet-lite0_4k-affinity_voc07-train_voc07-val.py")  # fmt: skip
    p.add_argument("--classifier-config",
                   default="configs/cam/cam_efficientnet-lite0_4k_voc07-train_voc07-val.py",
                   help="the weak config without its affinity phase (its base)")  # fmt: skip
    p.add_argument("--phase-hook-index", type=int, default=1,
                   help="position of WSODAffinityPhaseHook in the weak config's custom_hooks")  # fmt: skip
    p.add_argument("--iters", type=int, default=40, help="training iterations per run [40]")
    p.add_argument("--rounds", type=int, default=2, help="fp32/bf16 alternations [2]")
    p.add_argument("--images", type=int, default=40, help="val images to detect on [40]")
    p.add_argument("--cases", nargs="+", default=["strong", "weak"], choices=["strong", "weak"])
    p.add_argument("--work-dir", help="keep the runs here [a temporary folder]")
    args = p.parse_args()
    if not (args.data / "train_gt.json").is_file():
        raise SystemExit(
            f"{args.data}: no train_gt.json; run `make data PIPELINE=... DATA_ROOT=...`"
        )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.work_dir or tmp).resolve()
        root.mkdir(parents=True, exist_ok=True)
        args.val = subset(args.data / "val.json", args.images, root / "val_subset.json")
        args.val_props = root / "val_subset.pkl"
        if "weak" in args.cases:
            run(["proposals", "--split", str(args.val), "--out", str(args.val_props)],
                root / "proposals.log")  # fmt: skip
        print(f"CPU: {describe()}; {args.iters} iterations per run, {args.rounds} rounds, "
              f"{args.images} val images; medians over the rounds")  # fmt: skip
        print(f"precision auto on this machine: {auto_choice()}")
        for name, case in (("strong", strong_case), ("weak", weak_case)):
            if name not in args.cases:
                continue
            results = {p: [] for p in PRECISIONS}
            for rnd in range(args.rounds):
                for precision in PRECISIONS:
                    results[precision].append(case(args, root, precision, rnd))
            report(name, results)


if __name__ == "__main__":
    main()
