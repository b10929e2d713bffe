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
