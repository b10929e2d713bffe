"""Custom datasets: CSV (+ COCO or VOC XML boxes) and COCO json with image labels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wsod import contracts
from wsod.datasets.base import DatasetError
from wsod.stages.data import run


@pytest.fixture()
def images(voc_root: Path, voc_train_ids: list[str], tmp_path: Path) -> Path:
    """A folder with 4 real VOC images under plain names, plus their XML in boxes_xml/."""
    root = tmp_path / "imgs"
    (root / "pics").mkdir(parents=True)
    (tmp_path / "boxes_xml").mkdir()
    for i in voc_train_ids[:4]:
        shutil.copy(voc_root / "JPEGImages" / f"{i}.jpg", root / "pics" / f"{i}.jpg")
        shutil.copy(voc_root / "Annotations" / f"{i}.xml", tmp_path / "boxes_xml" / f"{i}.xml")
    return root


def test_csv_with_header_sorted_classes_and_xml_boxes(images: Path, tmp_path: Path) -> None:
    (images / "train.csv").write_text(
        "file,labels\npics/000012.jpg,car\npics/000017.jpg,person;horse\n"
    )
    (images / "val.csv").write_text("pics/000023.jpg,bicycle;person\npics/000026.jpg,\n")
    out = tmp_path / "out"
    summary = run(images, out, format="csv", boxes=tmp_path / "boxes_xml")
    assert summary["train"]["images"] == 2 and summary["val"]["images"] == 2
    train = contracts.load_split(out / "train.json")
    names = [c["name"] for c in train["categories"]]
    assert names == ["bicycle", "car", "horse", "person"]  # sorted union over both CSVs
    assert train["info"]["data_root"] == str(images.resolve())
    assert train["images"][0] == {
        "id": 12,
        "file_name": "pics/000012.jpg",
        "width": 500,
        "height": 333,
        "labels": [2],
    }
    assert train["images"][1]["labels"] == [3, 4]
    val = contracts.load_split(out / "val.json")
    assert val["images"][1]["labels"] == []  # an image with no object of any class
    gt = contracts.validate_gt(json.loads((out / "train_gt.json").read_text()))
    assert gt["info"]["has_boxes"] is True
    car = [a for a in gt["annotations"] if a["image_id"] == 12]
    assert [(a["category_id"], a["bbox"]) for a in car] == [(2, [155.0, 96.0, 196.0, 174.0])]


def test_csv_explicit_classes_coco_boxes_and_unknown_name(images: Path, tmp_path: Path) -> None:
    csv = tmp_path / "mine.csv"
    csv.write_text("pics/000012.jpg,car\npics/000017.jpg,horse\n")
    boxes = tmp_path / "boxes.json"
    boxes.write_text(
        json.dumps(
            {
                "images": [{"id": 5, "file_name": "pics/000012.jpg"}],
                "categories": [{"id": 9, "name": "car"}],
                "annotations": [{"id": 1, "image_id": 5, "category_id": 9, "bbox": [1, 2, 30, 40]}],
            }
        )
    )
    out = tmp_path / "out"
    summary = run(
        images, out, format="csv", splits=[str(csv)], classes=["horse", "car"], boxes=boxes
    )
    assert list(summary) == ["mine"]
    split = contracts.load_split(out / "mine.json")
    assert [im["labels"] for im in split["images"]] == [[2], [1]]
    gt = json.loads((out / "mine_gt.json").read_text())
    assert [(a["image_id"], a["category_id"], a["bbox"]) for a in gt["annotations"]] == [
        (12, 2, [1.0, 2.0, 30.0, 40.0])
    ]
    csv.write_text("pics/000012.jpg,car\npics/000017.jpg,zebra\n")
    with pytest.raises(DatasetError, match=r"mine\.csv.*unknown class names \['zebra'\]"):
        run(images, tmp_path / "out2", format="csv", splits=[str(csv)], classes=["horse", "car"])
    assert not (tmp_path / "out2").exists()
    summary = run(
        images,
        tmp_path / "out3",
        format="csv",
        splits=[str(csv)],
        classes=["horse", "car"],
        skip_bad=True,
    )
    assert summary["mine"] == {**summary["mine"], "images": 1, "skipped": 1}
    gt = json.loads((tmp_path / "out3" / "mine_gt.json").read_text())
    assert gt["info"]["has_boxes"] is False and gt["annotations"] == []


def test_csv_missing_and_empty(images: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"train\.csv: split file not found"):
        run(images, tmp_path / "out", format="csv")
    (images / "train.csv").write_text("file,labels\n")
    with pytest.raises(DatasetError, match=r"train\.csv: the split CSV is empty"):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    (images / "train.csv").write_text("pics/000012.jpg,car\npics/nope.jpg,car\n")
    with pytest.raises(DatasetError, match=r"nope\.jpg: image file is missing"):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    assert not (tmp_path / "out").exists()


def test_coco_labels_from_images_or_annotations(images: Path, tmp_path: Path) -> None:
    coco = {
        "images": [
            {
                "id": 100,
                "file_name": "pics/000012.jpg",
                "width": 500,
                "height": 333,
                "labels": ["car"],
            },
            {"id": 101, "file_name": "pics/000017.jpg", "width": 480, "height": 364},
        ],
        "categories": [
            {"id": 3, "name": "horse"},
            {"id": 1, "name": "car"},
            {"id": 7, "name": "person"},
        ],
        "annotations": [
            {"id": 1, "image_id": 101, "category_id": 3, "bbox": [89, 77, 314, 259]},
            {"id": 2, "image_id": 101, "category_id": 7, "bbox": [184, 61, 95, 138]},
        ],
    }
    (images / "train.json").write_text(json.dumps(coco))
    out = tmp_path / "out"
    summary = run(images, out, format="coco", splits=["train"])
    assert summary["train"]["images"] == 2 and summary["train"]["objects"] == 2
    split = contracts.load_split(out / "train.json")
    assert [c["name"] for c in split["categories"]] == ["car", "horse", "person"]  # id order
    assert [(im["id"], im["labels"]) for im in split["images"]] == [(100, [1]), (101, [2, 3])]
    assert all("bbox" not in im for im in split["images"]) and "annotations" not in split
    gt = contracts.validate_gt(json.loads((out / "train_gt.json").read_text()))
    assert [(a["image_id"], a["category_id"]) for a in gt["annotations"]] == [(101, 2), (101, 3)]
    # a single json file as the source: one split, named by the file
    summary = run(images / "train.json", tmp_path / "out2", format="coco")
    assert list(summary) == ["train"]
    assert contracts.load_split(tmp_path / "out2" / "train.json")["info"]["data_root"] == str(
        images.resolve()
    )
    coco["images"][0]["labels"] = ["unicorn"]
    (images / "train.json").write_text(json.dumps(coco))
    with pytest.raises(DatasetError, match="unknown class 'unicorn'"):
        run(images, tmp_path / "out3", format="coco", splits=["train"])


# ----------------------------------------------------------------------------- CSV strictness
def test_csv_row_without_label_column_is_an_error(images: Path, tmp_path: Path) -> None:
    """A lost label column is not "no labels": only 'file,' says that."""
    (images / "train.csv").write_text("pics/000012.jpg,car\npics/000017.jpg\n")
    with pytest.raises(DatasetError, match=r"train\.csv:2: row 'pics/000017\.jpg' has no label"):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    assert not (tmp_path / "out").exists()
    (images / "train.csv").write_text("pics/000012.jpg,car\npics/000017.jpg,\n")
    run(images, tmp_path / "out", format="csv", splits=["train"])
    split = contracts.load_split(tmp_path / "out" / "train.json")
    assert [im["labels"] for im in split["images"]] == [[1], []]


def test_csv_case_duplicates_are_refused(images: Path, tmp_path: Path) -> None:
    (images / "train.csv").write_text(
        "pics/000012.jpg,Car\npics/000017.jpg,car;person\npics/000023.jpg,person\n"
    )
    with pytest.raises(DatasetError, match=r"train\.csv.*differ only in case: Car / car"):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    with pytest.raises(DatasetError, match=r"--classes.*Car / car"):
        run(images, tmp_path / "out", format="csv", splits=["train"], classes=["Car", "car"])
    assert not (tmp_path / "out").exists()


def test_csv_near_typo_warns_in_one_line_with_its_match_and_counts_are_printed(
    images: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """'hrose' beside 'horse' is a warning naming the row and the near match, printed by the CLI
    as one line without Python source lines. Before: every class named on one image warned
    ('a typo?'), 5 genuine classes out of 6 on a small dataset, with no near match."""
    from wsod import cli

    monkeypatch.setattr(cli, "STAGES", ("data",))
    (images / "train.csv").write_text(
        "pics/000012.jpg,horse\npics/000017.jpg,horse;person\npics/000023.jpg,hrose;person\n"
    )
    with pytest.warns(
        UserWarning, match=r"train\.csv:3: class 'hrose' \(1 image\) looks like a typo of 'horse'"
    ):
        summary = run(images, tmp_path / "out", format="csv", splits=["train"])
    assert summary["train"]["images_per_class"] == {"horse": 2, "hrose": 1, "person": 2}
    # with --classes the typo is an error instead
    with pytest.raises(DatasetError, match=r"unknown class names \['hrose'\]"):
        run(images, tmp_path / "o2", format="csv", splits=["train"], classes=["horse", "person"])
    import sys
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):  # Python's default
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():  # printed as outside pytest, which records warnings
        warnings.simplefilter("always")
        warnings.showwarning = show
        rc = cli.main(
            ["data", "--format", "csv", "--source", str(images), "--out-dir", str(tmp_path / "o3")]
            + ["--splits", "train"]
        )
    assert rc == 0
    captured = capsys.readouterr()
    assert "data train: images per class: horse 2, hrose 1, person 2" in captured.out
    warned = [ln for ln in captured.err.splitlines() if "hrose" in ln]
    assert len(warned) == 1 and warned[0].startswith("wsod data: warning: ")
    assert "warnings.warn" not in captured.err and "UserWarning" not in captured.err


def test_rare_genuine_classes_do_not_warn(images: Path, tmp_path: Path) -> None:
    import warnings

    (images / "train.csv").write_text(
        "pics/000012.jpg,car;chair\npics/000017.jpg,horse;person;chair\n"
        "pics/000023.jpg,bicycle;cat;car;chair\npics/000026.jpg,dog\n"
    )  # 'car' (2 images) beside 'chair' (3): two classes, as on VOC images
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 'cat' / 'car' / 'chair' are classes, not typos
        summary = run(images, tmp_path / "out", format="csv", splits=["train"])
    assert set(summary["train"]["images_per_class"]) == {
        "bicycle", "car", "cat", "chair", "dog", "horse", "person"
    }  # fmt: skip


def test_class_without_a_training_image_warns_in_one_line(images: Path, tmp_path: Path) -> None:
    (images / "train.csv").write_text("pics/000012.jpg,car\npics/000017.jpg,horse;person\n")
    (images / "val.csv").write_text("pics/000023.jpg,bicycle;person\npics/000026.jpg,dog\n")
    with pytest.warns(UserWarning) as record:
        run(images, tmp_path / "out", format="csv")
    lines = [str(w.message) for w in record if "no image of class" in str(w.message)]
    assert lines == [
        "split 'train' has no image of class 'bicycle', 'dog': the detectors cannot learn it; "
        "add training images of it, or leave it out (--classes)"
    ]


def test_an_image_in_both_train_and_val_is_refused(images: Path, tmp_path: Path) -> None:
    (images / "train.csv").write_text("pics/000012.jpg,car\npics/000017.jpg,horse;person\n")
    (images / "val.csv").write_text("pics/000023.jpg,bicycle\npics/000017.jpg,horse;person\n")
    with pytest.raises(
        DatasetError, match=r"pics/000017\.jpg: listed in split 'train' and in split 'val'"
    ):
        run(images, tmp_path / "out", format="csv")
    assert not (tmp_path / "out").exists()  # refused before anything is written
