"""benchmarks/pack_run_inputs.py: the labelled top-k it keeps, the gzip round trip and the
sidecars, on a small run folder built here."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("pri", REPO / "benchmarks/pack_run_inputs.py")
pri = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pri)


def det(image, cat, score):
    return {"image_id": image, "category_id": cat, "bbox": [0, 0, 10, 10], "score": score}


SPLIT = {"images": [{"id": 1, "labels": [3, 5]}, {"id": 2, "labels": [3]}, {"id": 4}]}
DETS = [
    det(1, 3, 0.2), det(1, 3, 0.9), det(1, 3, 0.5), det(1, 3, 0.7),  # labelled: best 2 kept
    det(1, 5, 0.1),  # labelled, alone: kept
    det(1, 7, 0.99),  # class 7 is not labelled in image 1: dropped
    det(2, 3, 0.3), det(2, 5, 0.8),  # class 5 not labelled in image 2: dropped
    det(4, 3, 0.6),  # image without labels: dropped
    det(9, 3, 0.6),  # image not in the split: dropped
]  # fmt: skip


def test_keeps_the_k_best_of_each_labelled_class_in_order():
    kept = pri.labelled_top_k(DETS, SPLIT, 2)
    assert kept == [det(1, 3, 0.9), det(1, 3, 0.7), det(1, 5, 0.1), det(2, 3, 0.3)]
    assert pri.labelled_top_k(DETS, SPLIT, 1) == [det(1, 3, 0.9), det(1, 5, 0.1), det(2, 3, 0.3)]
    assert len(pri.labelled_top_k(DETS, SPLIT, 10)) == 6


@pytest.fixture
def run(tmp_path):
    run = tmp_path / "run"
    for sub in ("data", "weak", "denoise"):
        (run / sub).mkdir(parents=True)
    (run / "data/train.json").write_text(json.dumps(SPLIT))
    (run / "weak/train_dets.json").write_text(json.dumps(DETS))
    (run / "weak/train_dets.json.meta.json").write_text('{"commit": "abc", "cpu": "x"}')
    pseudo = {"images": SPLIT["images"], "annotations": [dict(det(1, 3, 0.9), id=1)]}
    (run / "denoise/pseudo_train.json").write_text(json.dumps(pseudo))
    (run / "denoise/pseudo_train.json.meta.json").write_text('{"commit": "abc"}')
    return run


def test_packs_gzipped_json_with_sidecars_and_same_bytes_twice(run, tmp_path):
    out = tmp_path / "inputs"
    sizes = pri.pack(run, out, 2)
    assert set(sizes) == {"pseudo_train.json.gz", "train_dets_top2.json.gz"}
    with gzip.open(out / "pseudo_train.json.gz") as f:
        assert json.load(f) == json.loads((run / "denoise/pseudo_train.json").read_text())
    with gzip.open(out / "train_dets_top2.json.gz") as f:
        assert json.load(f) == pri.labelled_top_k(DETS, SPLIT, 2)
    assert json.loads((out / "train_dets_top2.json.meta.json").read_text())["commit"] == "abc"
    assert (out / "pseudo_train.json.meta.json").is_file()
    first = (out / "train_dets_top2.json.gz").read_bytes()
    pri.pack(run, out, 2)  # no time stamp inside: a repacked run changes no byte
    assert (out / "train_dets_top2.json.gz").read_bytes() == first


def test_an_unfinished_run_is_named(run, tmp_path):
    (run / "weak/train_dets.json").unlink()
    with pytest.raises(SystemExit, match="train_dets.json: not found"):
        pri.pack(run, tmp_path / "inputs", 2)
    with pytest.raises(SystemExit):
        pri.main(["--run", str(run), "--out", str(tmp_path / "x"), "--top", "0"])
