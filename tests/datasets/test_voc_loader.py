"""VOC loader on the real VOC 2007 folder: list counts, per-class labels, box conversion."""

from __future__ import annotations

from pathlib import Path

import pytest

from wsod import VOC_CLASSES
from wsod.datasets.base import BadItem
from wsod.datasets.voc import (
    available_splits,
    load_voc_split,
    parse_voc_xml,
    read_class_lists,
    read_id_list,
    voc_box_to_xyxy,
)


def test_full_lists_counts_and_labels(voc_root: Path) -> None:
    """Whole split lists and per-class lists (no image decoding): 2,500 / 1,253, 20 classes."""
    main = voc_root / "ImageSets" / "Main"
    assert set(available_splits(voc_root)) >= {"train", "val"}
    train = read_id_list(main / "train.txt")
    val = read_id_list(main / "val.txt")
    assert (len(train), len(val)) == (2500, 1253)
    assert not set(train) & set(val)
    labels, files = read_class_lists(voc_root, "train", VOC_CLASSES)
    assert len(files) == 20
    assert set(labels) == set(train)
    assert train[0] == "000012"
    assert labels["000012"] == {"car"}
    assert labels["000017"] == {"horse", "person"}
    # 0 ('present only as difficult') counts as present: 000648 has aeroplane/car/person at 0
    assert labels["000648"] == {"aeroplane", "bus", "car", "person"}
    val_labels, _ = read_class_lists(voc_root, "val", VOC_CLASSES)
    assert set(val_labels) == set(val)


def test_box_conversion_on_real_xml(voc_root: Path) -> None:
    ann = parse_voc_xml(voc_root / "Annotations" / "000017.xml", VOC_CLASSES)
    assert (ann["width"], ann["height"]) == (480, 364)
    # file: person 185 62 279 199, horse 90 78 403 336 (1-based inclusive)
    assert [o["name"] for o in ann["objects"]] == ["person", "horse"]
    assert ann["objects"][0]["bbox"] == [184.0, 61.0, 279.0, 199.0]
    assert ann["objects"][1]["bbox"] == [89.0, 77.0, 403.0, 336.0]
    assert ann["objects"][1]["category_id"] == VOC_CLASSES.index("horse") + 1
    assert voc_box_to_xyxy(1, 1, 1, 1) == [0.0, 0.0, 1.0, 1.0]  # one pixel -> width 1


def test_load_split_limit(voc_root: Path) -> None:
    data = load_voc_split(voc_root, "train", limit=8)
    assert [im["id"] for im in data.images] == [12, 17, 23, 26, 32, 33, 34, 35]
    im = data.images[0]
    assert im == {
        "id": 12,
        "file_name": "JPEGImages/000012.jpg",
        "width": 500,
        "height": 333,
        "labels": [VOC_CLASSES.index("car") + 1],
    }
    assert data.data_root == voc_root.resolve()
    assert (data.data_root / im["file_name"]).is_file()
    car = [a for a in data.annotations if a["image_id"] == 12]
    assert car == [
        {"image_id": 12, "category_id": 7, "bbox": [155.0, 96.0, 196.0, 174.0], "difficult": 0}
    ]
    assert data.images[1]["labels"] == [13, 15]  # horse, person


def test_unknown_class_in_xml(tmp_path: Path) -> None:
    xml = tmp_path / "x.xml"
    xml.write_text(
        "<annotation><size><width>10</width><height>10</height></size><object>"
        "<name>unicorn</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax>"
        "<ymax>5</ymax></bndbox></object></annotation>"
    )
    with pytest.raises(BadItem, match="unknown class name 'unicorn'"):
        parse_voc_xml(xml, VOC_CLASSES)
