"""Worker processes of ``wsod proposals`` under signals, on 3 real VOC images: killing the main
process takes its workers (and multiprocessing's resource tracker) with it; killing a worker
stops the run with "rerun the same command to resume", and the rerun finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The child runs `wsod proposals --workers 2`. Its workers re-import this script (spawn), so the
# patch below slows down every image in them too: each announces itself, then waits, so the
# test can send its signal while both workers are busy.
_CHILD = r"""
import os, sys, time
from pathlib import Path

import wsod.proposals.compute as compute

_real = compute.compute_image


def _slow(path, key, params, size=None):
    Path(os.environ["WSOD_TEST_MARKS"], str(os.getpid())).touch()
    time.sleep(float(os.environ["WSOD_TEST_PAUSE"]))
    return _real(path, key, params, size)


compute.compute_image = _slow

if __name__ == "__main__":
    import wsod.cli

    wsod.cli.STAGES = ("proposals",)
    sys.exit(wsod.cli.main(["proposals", *sys.argv[1:]]))
"""


def _split(voc_root, ids, path):
    from PIL import Image

    images = []
    for i in ids:
        with Image.open(voc_root / "JPEGImages" / f"{i}.jpg") as im:
            w, h = im.size
        images.append(
            {
                "id": int(i),
                "file_name": f"JPEGImages/{i}.jpg",
                "width": w,
                "height": h,
                "labels": [1],
            }
        )
    path.write_text(
        json.dumps(
            {
                "images": images,
                "categories": [{"id": 1, "name": "a"}],
                "info": {"data_root": str(voc_root), "split": "train"},
            }
        )
    )
    return path


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _start(tmp_path, voc_root, voc_train_ids, pause: float):
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    split = _split(voc_root, voc_train_ids[:3], tmp_path / "train.json")
    out = tmp_path / "train.pkl"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "WSOD_TEST_MARKS": str(marks),
        "WSOD_TEST_PAUSE": str(pause),
    }
    args = ["--split", str(split), "--out", str(out), "--workers", "2", "--resize", "120"]
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # signals for the test only, and the test can clean up
    )
    deadline = time.time() + 120
    while len(list(marks.iterdir())) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "the workers did not start"
        time.sleep(0.2)
    workers = sorted(int(p.name) for p in marks.iterdir())
    return proc, workers, (script, args, env, out)


def _cleanup(pids):
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_killing_the_main_process_ends_its_workers(tmp_path, voc_root, voc_train_ids):
    proc, workers, _ = _start(tmp_path, voc_root, voc_train_ids, pause=120)
    family = sorted(set(_children(proc.pid)) | set(workers))  # workers + resource tracker
    assert set(workers) <= set(family) and len(family) >= 2
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.time() + 20
        while any(_alive(p) for p in family) and time.time() < deadline:
            time.sleep(0.2)
        left = [p for p in family if _alive(p)]
        assert not left, f"processes {left} outlived the killed main process"
    finally:
        _cleanup(family)


def test_killing_a_worker_stops_the_run_with_how_to_resume(tmp_path, voc_root, voc_train_ids):
    proc, workers, (script, args, env, out) = _start(tmp_path, voc_root, voc_train_ids, pause=2)
    family = sorted(set(_children(proc.pid)) | set(workers))
    try:
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        _cleanup([proc.pid, *family])
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert "worker process died" in last and "rerun the same command to resume" in last
    assert not out.exists()
    # the same command again finishes the job
    env = {**env, "WSOD_TEST_PAUSE": "0"}
    res = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1])["images"] == 3 and out.is_file()
