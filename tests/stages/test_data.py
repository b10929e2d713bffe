"""Data stage: real VOC (a few images), outputs' contracts, bad input, the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wsod import VOC_CLASSES, contracts
from wsod.datasets.base import DatasetError
from wsod.stages.data import run

REPO = Path(__file__).resolve().parents[2]


def make_mini_voc(voc_root: Path, dest: Path, n: int = 4, split: str = "train") -> list[str]:
    """Copy the first ``n`` images of a real VOC split (+ XML, lists) into a VOC-style folder."""
    ids = (voc_root / "ImageSets" / "Main" / f"{split}.txt").read_text().split()[:n]
    for sub in ("JPEGImages", "Annotations", "ImageSets/Main"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    for i in ids:
        shutil.copy(voc_root / "JPEGImages" / f"{i}.jpg", dest / "JPEGImages")
        shutil.copy(voc_root / "Annotations" / f"{i}.xml", dest / "Annotations")
    main = dest / "ImageSets" / "Main"
    (main / f"{split}.txt").write_text("".join(f"{i}\n" for i in ids))
    for c in VOC_CLASSES:
        lines = (voc_root / "ImageSets" / "Main" / f"{c}_{split}.txt").read_text().splitlines()
        keep = [ln for ln in lines if ln.split()[0] in ids]
        (main / f"{c}_{split}.txt").write_text("\n".join(keep) + "\n")
    return ids


def test_real_voc_limit(voc_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    summary = run(voc_root, out, splits=("train", "val"), limit=8)
    assert summary["train"]["images"] == 8 and summary["val"]["images"] == 8
    train = contracts.load_split(out / "train.json")
    assert train["info"]["data_root"] == str(voc_root.resolve())
    assert train["info"]["split"] == "train" and train["info"]["num_images"] == 8
    assert train["info"]["num_skipped"] == 0 and train["info"]["format"] == "voc"
    assert [c["name"] for c in train["categories"]] == list(VOC_CLASSES)
    assert [c["id"] for c in train["categories"]] == list(range(1, 21))
    assert train["images"][0]["file_name"] == "JPEGImages/000012.jpg"
    gt = contracts.validate_gt(json.loads((out / "train_gt.json").read_text()))
    a = [a for a in gt["annotations"] if a["image_id"] == 12]
    assert len(a) == 1
    assert a[0]["bbox"] == [155.0, 96.0, 196.0, 174.0] and a[0]["area"] == 196.0 * 174.0
    assert a[0]["iscrowd"] == 0 and a[0]["difficult"] == 0 and a[0]["category_id"] == 7
    assert summary["train"]["objects"] == len(gt["annotations"])
    assert len({a["id"] for a in gt["annotations"]}) == len(gt["annotations"])
    for name in ("train.json", "train_gt.json", "val.json", "val_gt.json"):
        assert (out / f"{name}.meta.json").is_file()
    assert not (out / "train.skipped.json").exists()
    assert "annotations" not in train
    val = contracts.load_split(out / "val.json")
    assert val["images"][0]["id"] == 19 and val["info"]["split"] == "val"


def test_labels_from_xml_without_class_lists(voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    make_mini_voc(voc_root, root, n=3)
    for p in (root / "ImageSets" / "Main").glob("*_train.txt"):
        p.unlink()
    run(root, tmp_path / "out", splits=["train"])
    split = contracts.load_split(tmp_path / "out" / "train.json")
    assert [im["labels"] for im in split["images"]] == [[7], [13, 15], [2, 15]]


def test_partial_class_lists_are_an_error(voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    make_mini_voc(voc_root, root, n=2)
    (root / "ImageSets" / "Main" / "dog_train.txt").unlink()
    with pytest.raises(DatasetError, match="dog_train.txt"):
        run(root, tmp_path / "out", splits=["train"])


# ----------------------------------------------------------------------------- bad input
def _corrupt(root: Path, ids: list[str]) -> Path:
    p = root / "JPEGImages" / f"{ids[1]}.jpg"
    p.write_bytes(b"this is not a jpeg" * 10)
    return p


def _truncated(root: Path, ids: list[str]) -> Path:
    p = root / "JPEGImages" / f"{ids[1]}.jpg"
    p.write_bytes(p.read_bytes()[:3000])
    return p


def corrupt_in_the_middle(src: Path, dest: Path) -> Path:
    """A copy of a real JPEG with 8 bytes in the middle of its entropy-coded data overwritten
    by out-of-sequence restart markers (as a bad sector or a broken copy might leave): header
    and end-of-image marker intact, so only a full decode shows it."""
    data = bytearray(src.read_bytes())
    sos = data.index(b"\xff\xda")  # start of scan; its header length follows the marker
    start = sos + 2 + int.from_bytes(data[sos + 2 : sos + 4], "big")
    mid = (start + len(data) - 2) // 2
    data[mid : mid + 8] = b"\xff\xd0\xff\xd3\xff\xd5\xff\xd1"
    assert data.endswith(b"\xff\xd9")
    dest.write_bytes(bytes(data))
    return dest


def _corrupt_middle(root: Path, ids: list[str]) -> Path:
    p = root / "JPEGImages" / f"{ids[1]}.jpg"
    return corrupt_in_the_middle(p, p)


def _missing_image(root: Path, ids: list[str]) -> Path:
    p = root / "JPEGImages" / f"{ids[1]}.jpg"
    p.unlink()
    return p


def _bad_xml(root: Path, ids: list[str]) -> Path:
    p = root / "Annotations" / f"{ids[1]}.xml"
    p.write_text(p.read_text()[:200])
    return p


def _unknown_class(root: Path, ids: list[str]) -> Path:
    p = root / "Annotations" / f"{ids[1]}.xml"
    p.write_text(p.read_text().replace("<name>horse</name>", "<name>unicorn</name>"))
    return p


BAD_ITEMS = {
    "corrupt image": (_corrupt, "corrupt or unreadable"),
    "truncated image": (_truncated, "truncated"),
    "corrupt in the middle": (_corrupt_middle, "the decoder warns: Corrupt JPEG data"),
    "missing image": (_missing_image, "missing"),
    "malformed xml": (_bad_xml, "malformed XML"),
    "unknown class": (_unknown_class, "unknown class name 'unicorn'"),
}


@pytest.mark.parametrize("case", list(BAD_ITEMS))
def test_bad_item_raises_and_writes_nothing(case: str, voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    ids = make_mini_voc(voc_root, root, n=4)
    make_bad, reason = BAD_ITEMS[case]
    bad_file = make_bad(root, ids)
    out = tmp_path / "out"
    with pytest.raises(DatasetError) as err:
        run(root, out, splits=["train"])
    msg = str(err.value)
    assert str(bad_file) in msg and reason in msg and "--skip-bad" in msg
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("case", list(BAD_ITEMS))
def test_bad_item_skipped_and_counted(case: str, voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    ids = make_mini_voc(voc_root, root, n=4)
    make_bad, reason = BAD_ITEMS[case]
    bad_file = make_bad(root, ids)
    out = tmp_path / "out"
    summary = run(root, out, splits=["train"], skip_bad=True)
    assert summary["train"]["images"] == 3 and summary["train"]["skipped"] == 1
    split = contracts.load_split(out / "train.json")
    assert split["info"]["num_skipped"] == 1
    assert int(ids[1]) not in {im["id"] for im in split["images"]}
    gt = json.loads((out / "train_gt.json").read_text())
    assert int(ids[1]) not in {a["image_id"] for a in gt["annotations"]}
    report = json.loads((out / "train.skipped.json").read_text())
    assert report["num_skipped"] == 1
    assert report["skipped"][0]["item"] == ids[1]
    assert (
        report["skipped"][0]["file"] == str(bad_file) and reason in report["skipped"][0]["reason"]
    )


def test_empty_split_list(voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    make_mini_voc(voc_root, root, n=2)
    (root / "ImageSets" / "Main" / "val.txt").write_text("\n")
    out = tmp_path / "out"
    for skip in (False, True):
        with pytest.raises(DatasetError, match=r"val\.txt: the split list is empty"):
            run(root, out, splits=["train", "val"], skip_bad=skip)
    assert not out.exists()  # train was fine but nothing is written


def test_missing_split_list(voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    make_mini_voc(voc_root, root, n=2)
    out = tmp_path / "out"
    with pytest.raises(DatasetError) as err:
        run(root, out, splits=["train", "test"])
    assert "test.txt: split list not found" in str(err.value)
    assert "splits here: train" in str(err.value) and "--splits" in str(err.value)
    assert not out.exists()


def test_all_items_bad_is_an_error(voc_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "VOC2007"
    ids = make_mini_voc(voc_root, root, n=1)
    (root / "JPEGImages" / f"{ids[0]}.jpg").unlink()
    with pytest.raises(DatasetError, match="no usable images"):
        run(root, tmp_path / "out", splits=["train"], skip_bad=True)
    assert not (tmp_path / "out" / "train.json").exists()


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="make voc07"):
        run(tmp_path / "nope", tmp_path / "out")


# ----------------------------------------------------------------------------- CLI
def test_cli_help() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "wsod", "data", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "--skip-bad" in res.stdout and "wsod data --format demo" in res.stdout


def test_cli_reaches_run(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    import wsod.stages.data as stage
    from wsod import cli

    monkeypatch.setattr(cli, "STAGES", ("data",))  # independent of the other stages' commands
    calls = []

    def fake_run(source, out_dir, **kw):
        calls.append((source, out_dir, kw))
        return {"train": {"images": 2, "objects": 3, "skipped": 0, "split_file": "x.json"}}

    monkeypatch.setattr(stage, "run", fake_run)
    rc = cli.main(
        [
            "data",
            "--source",
            "src",
            "--out-dir",
            str(tmp_path),
            "--splits",
            "train",
            "--limit",
            "2",
            "--skip-bad",
            "--format",
            "voc",
        ]
    )
    assert rc == 0
    assert calls == [
        ("src", str(tmp_path), {"format": "voc", "splits": ["train"], "limit": 2, "skip_bad": True})
    ]
    assert "data train: 2 images" in capsys.readouterr().out


def test_cli_error_is_one_line(voc_root: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    from wsod import cli

    monkeypatch.setattr(cli, "STAGES", ("data",))
    rc = cli.main(
        [
            "data",
            "--source",
            str(voc_root),
            "--out-dir",
            str(tmp_path / "o"),
            "--splits",
            "nosuchsplit",
        ]
    )
    assert rc == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("wsod data: error:") and "nosuchsplit.txt" in err
    assert len(err.splitlines()) == 1


def test_data_stage_stays_light() -> None:
    """The data stage (library + CLI module) imports neither torch nor mmdet."""
    code = (
        "import sys, wsod.stages.data, wsod.commands.data, wsod.datasets.demo, "
        "wsod.datasets.download, wsod.datasets.custom\n"
        "heavy = [m for m in ('torch', 'mmdet', 'mmcv', 'mmengine') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr


def test_vocdevkit_folder_resolves_to_voc2007(voc_root, tmp_path):
    from wsod.stages.data import run

    summary = run(voc_root.parent, tmp_path, splits=("val",), limit=2)
    split = json.loads((tmp_path / "val.json").read_text())
    assert summary["val"]["images"] == 2
    assert split["info"]["data_root"] == str(voc_root.resolve())


def test_corrupt_in_the_middle_passes_header_checks_but_the_decoder_warns(
    voc_root: Path, voc_train_ids: list[str], tmp_path: Path
) -> None:
    """The test image of "corrupt in the middle": PIL's header check and the end marker pass,
    OpenCV decodes it with only libjpeg's warning on stderr (no file name) -- what the data
    stage now catches."""
    from PIL import Image

    bad = corrupt_in_the_middle(
        voc_root / "JPEGImages" / f"{voc_train_ids[0]}.jpg", tmp_path / "bad.jpg"
    )
    with Image.open(bad) as im:
        im.verify()
    code = "import cv2, sys; print(cv2.imread(sys.argv[1]).shape)"
    res = subprocess.run(
        [sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and res.stdout.strip().startswith("(")
    assert "Corrupt JPEG data" in res.stderr and "bad.jpg" not in res.stderr
