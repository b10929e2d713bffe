import json

import pytest

from wsod.utils.io import ArtifactError, read_json, write_json_artifact, write_meta


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "a" / "x.json"

    def boom(tmp):
        tmp.write_text("partial")
        raise RuntimeError("killed half-way")

    from wsod.utils.io import write_artifact

    with pytest.raises(RuntimeError):
        write_artifact(out, boom, stage="test")
    assert not out.exists()
    assert list(out.parent.iterdir()) == []  # no temp file left behind


def test_json_artifact_and_meta(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_text("hello")
    out = tmp_path / "x.json"
    write_json_artifact(
        out, {"a": 1}, stage="unit", config={"k": (1, 2)}, inputs=[inp], seed=3, started=0.0
    )
    assert json.loads(out.read_text()) == {"a": 1}
    meta = json.loads((tmp_path / "x.json.meta.json").read_text())
    assert meta["stage"] == "unit"
    assert meta["seed"] == 3
    assert meta["config"] == {"k": [1, 2]}
    # sha256 of b"hello"
    assert meta["inputs_sha256"][str(inp)] == (
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )
    assert meta["packages"]["numpy"]
    assert meta["wall_time_s"] > 0
    # a python process holding numpy holds more than 10 MB and far less than 100 GB
    assert 10 < meta["peak_rss_mb"]["self"] < 100_000


def test_read_json_errors_name_the_file(tmp_path):
    with pytest.raises(ArtifactError, match="no such file"):
        read_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ArtifactError, match="bad.json: not valid json"):
        read_json(bad)


def test_write_meta_handles_missing_inputs(tmp_path):
    p = write_meta(tmp_path / "y.json", stage="s", inputs=[tmp_path / "nope"])
    assert json.loads(p.read_text())["inputs_sha256"] == {str(tmp_path / "nope"): None}


# ----------------------------------------------------------------------------- interruption
_KILL_CHILD = r"""
import json, os, signal, sys
from pathlib import Path

import wsod.utils.io as io

path, kill_at, tag = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
count = [0]


def counted(fn):
    def wrapper(*args, **kwargs):
        if count[0] == kill_at:  # SIGKILL right before the kill_at-th file operation
            os.kill(os.getpid(), signal.SIGKILL)
        count[0] += 1
        return fn(*args, **kwargs)

    return wrapper


os.replace, os.unlink, os.rename = counted(os.replace), counted(os.unlink), counted(os.rename)
io.write_json_artifact(path, {"tag": tag}, stage="kill-test", extra={"tag": tag})
if count[0] == kill_at:  # right after the last one
    os.kill(os.getpid(), signal.SIGKILL)
print(json.dumps({"operations": count[0]}))
"""


def _state(out):
    """(artifact tag or None, its sidecar's tag or None)."""
    meta = out.with_name(out.name + ".meta.json")
    art = json.loads(out.read_text())["tag"] if out.exists() else None
    side = json.loads(meta.read_text())["tag"] if meta.exists() else None
    return art, side


@pytest.mark.parametrize("previous", [True, False], ids=["over-previous-run", "fresh"])
def test_kill_at_every_file_operation_never_leaves_a_missing_or_stale_meta(tmp_path, previous):
    """SIGKILL a writer before each rename/unlink of write_artifact (and after the last): an
    artifact that exists always has its own sidecar, never none and never the previous run's."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    script = tmp_path / "child.py"
    script.write_text(_KILL_CHILD)
    seen = set()
    for kill_at in range(30):
        out = tmp_path / f"k{kill_at}" / "labels.json"
        if previous:
            write_json_artifact(out, {"tag": "old"}, stage="kill-test", extra={"tag": "old"})
        res = subprocess.run(
            [sys.executable, str(script), str(out), str(kill_at), "new"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=repo,
            env=env,
        )
        art, side = _state(out)
        assert art is None or art == side, (kill_at, art, side, res.stderr)
        seen.add(art)
        if res.returncode == 0:
            break
        assert res.returncode == -signal.SIGKILL, res.stderr
    assert res.returncode == 0 and _state(out) == ("new", "new")  # ran past every kill point
    assert None in seen and ("old" in seen) == previous  # the kills did hit between the steps


def test_read_pickle_needs_the_opt_in(tmp_path):
    import pickle

    from wsod.utils.io import PickleNotAllowedError, read_pickle

    marker = tmp_path / "ran"
    p = tmp_path / "payload.pkl"
    # a pickle that would run code (create a file) when loaded
    p.write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(PickleNotAllowedError, match=r"payload\.pkl.*--allow-pickle"):
        read_pickle(p)
    assert not marker.exists()
    with pytest.warns(UserWarning, match="unpickling"):
        read_pickle(p, allow_pickle=True)
    assert marker.exists()


class _Payload:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))
