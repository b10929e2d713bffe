"""Demo dataset: deterministic (byte-identical), VOC layout read by the VOC loader.

Its generation time is a speed goal, measured by ``benchmarks/demo_dataset_speed.py``, not
asserted here (a busy machine would fail a correct test).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from wsod import contracts
from wsod.datasets.demo import DEMO_CLASSES, MARKER, ensure_demo_dataset, render_image
from wsod.stages.data import run


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_deterministic_and_seed_dependent(tmp_path: Path) -> None:
    a = ensure_demo_dataset(tmp_path / "a", seed=3, num_images=(12, 4))
    b = ensure_demo_dataset(tmp_path / "b", seed=3, num_images=(12, 4))
    c = ensure_demo_dataset(tmp_path / "c", seed=4, num_images=(12, 4))
    ha, hb, hc = _hashes(a), _hashes(b), _hashes(c)
    assert len([k for k in ha if k.startswith("JPEGImages/")]) == 16
    assert ha == hb
    assert ha["JPEGImages/000001.jpg"] != hc["JPEGImages/000001.jpg"]
    main = a / "ImageSets" / "Main"
    assert len(main.joinpath("train.txt").read_text().split()) == 12
    assert len(main.joinpath("val.txt").read_text().split()) == 4
    for cls in DEMO_CLASSES:
        assert main.joinpath(f"{cls}_val.txt").is_file()


def test_marker_reuse_and_regenerate(tmp_path: Path) -> None:
    root = ensure_demo_dataset(tmp_path / "d", seed=0, num_images=(6, 2))
    img = root / "JPEGImages" / "000001.jpg"
    mtime = img.stat().st_mtime_ns
    assert json.loads((root / MARKER).read_text())["seed"] == 0
    ensure_demo_dataset(root, seed=0, num_images=(6, 2))
    assert img.stat().st_mtime_ns == mtime  # reused, not rewritten
    ensure_demo_dataset(root, seed=1, num_images=(3, 1))
    assert json.loads((root / MARKER).read_text())["seed"] == 1
    assert len(list((root / "JPEGImages").iterdir())) == 4
    assert not list(root.glob(".generating-*"))


def test_refuses_a_folder_that_is_not_a_demo_dataset(tmp_path: Path) -> None:
    (tmp_path / "voc" / "JPEGImages").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="not a generated demo dataset"):
        ensure_demo_dataset(tmp_path / "voc")


def test_boxes_round_trip_through_the_voc_loader(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = run(tmp_path / "demo", out, format="demo", num_images=(10, 3), seed=7)
    assert summary["train"]["images"] == 10 and summary["val"]["images"] == 3
    split = contracts.load_split(out / "train.json")
    gt = contracts.validate_gt(json.loads((out / "train_gt.json").read_text()))
    assert [c["name"] for c in split["categories"]] == list(DEMO_CLASSES)
    assert split["info"]["format"] == "demo"
    for idx in (1, 2, 3):
        img, objects = render_image(7, idx)
        on_disk = np.asarray(Image.open(tmp_path / "demo" / "JPEGImages" / f"{idx:06d}.jpg"))
        assert on_disk.shape == img.shape == (240, 320, 3)
        same = np.abs(on_disk.astype(int) - img).mean()  # JPEG q90 of the same noisy picture
        other = np.abs(on_disk.astype(int) - render_image(7, idx + 10)[0]).mean()
        assert same < 10 and other > 3 * same
        anns = [a for a in gt["annotations"] if a["image_id"] == idx]
        want = [[x1, y1, x2 - x1, y2 - y1] for x1, y1, x2, y2 in (o["bbox"] for o in objects)]
        assert [a["bbox"] for a in anns] == want
        im = next(i for i in split["images"] if i["id"] == idx)
        names = sorted({DEMO_CLASSES.index(o["name"]) + 1 for o in objects})
        assert im["labels"] == names and 1 <= len(objects) <= 4


@pytest.mark.slow  # the default size: 500 images generated and read back
def test_default_size_is_varied(tmp_path: Path) -> None:
    summary = run(tmp_path / "demo", tmp_path / "out", format="demo")
    assert (summary["train"]["images"], summary["val"]["images"]) == (400, 100)
    gt = json.loads((tmp_path / "out" / "train_gt.json").read_text())
    wh = np.array([a["bbox"][2:] for a in gt["annotations"]])
    assert 2.0 <= len(gt["annotations"]) / 400 <= 3.0
    assert wh.max(1).min() >= 12 and wh.max() <= 180  # scales 30-160 px (x aspect 0.8-1.25)
    assert (wh.max(1) < 50).mean() > 0.15 and (wh.max(1) > 100).mean() > 0.15
    counts = np.bincount([a["category_id"] for a in gt["annotations"]], minlength=6)[1:]
    assert counts.min() > 0.6 * counts.mean()  # every class well represented
    split = json.loads((tmp_path / "out" / "train.json").read_text())
    pos = np.bincount([c for im in split["images"] for c in im["labels"]], minlength=6)[1:]
    assert (pos > 100).all() and (pos < 300).all()  # each class present in some, not all images
