"""Label CSVs as spreadsheets save them (Excel's "CSV UTF-8": a byte-order mark and CRLF; a
decimal-comma locale: ``;`` between cells), on real VOC images, and row errors that name the
CSV line."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from wsod import contracts
from wsod.datasets.base import DatasetError
from wsod.stages.data import run

ROWS = [("file", "labels"), ("pics/000012.jpg", "car"), ("pics/000017.jpg", "horse;person")]


@pytest.fixture()
def images(voc_root: Path, voc_train_ids: list[str], tmp_path: Path) -> Path:
    """A folder with 4 real VOC images under pics/."""
    root = tmp_path / "imgs"
    (root / "pics").mkdir(parents=True)
    for i in voc_train_ids[:4]:
        shutil.copy(voc_root / "JPEGImages" / f"{i}.jpg", root / "pics" / f"{i}.jpg")
    return root


def _excel(path: Path, rows, delimiter: str = ",") -> None:
    """What Excel's "CSV UTF-8" writes: a byte-order mark, CRLF row ends, quoted cells where a
    cell holds the delimiter."""
    with open(path, "w", encoding="utf-8-sig", newline="") as f:
        csv.writer(f, delimiter=delimiter, lineterminator="\r\n").writerows(rows)


def _labels(out: Path) -> list[tuple[str, list[str]]]:
    split = contracts.load_split(out / "train.json")
    names = dict(enumerate(contracts.category_names(split), 1))
    return [(im["file_name"], [names[c] for c in im["labels"]]) for im in split["images"]]


def test_bom_and_crlf_csv_reads_like_a_plain_one(images: Path, tmp_path: Path) -> None:
    """Before: the BOM stuck to the header's first cell, so the header was read as an image
    ('\\ufefffile: image file is missing')."""
    _excel(images / "train.csv", ROWS)
    assert (images / "train.csv").read_bytes().startswith(b"\xef\xbb\xbffile,labels\r\n")
    run(images, tmp_path / "out", format="csv", splits=["train"])
    assert _labels(tmp_path / "out") == [
        ("pics/000012.jpg", ["car"]),
        ("pics/000017.jpg", ["horse", "person"]),
    ]
    # without the header, the BOM sits on the first image's name
    _excel(images / "train.csv", ROWS[1:])
    run(images, tmp_path / "o2", format="csv", splits=["train"])
    assert _labels(tmp_path / "o2")[0] == ("pics/000012.jpg", ["car"])


def test_semicolon_separated_csv_where_unambiguous(images: Path, tmp_path: Path) -> None:
    """A spreadsheet set to a decimal comma separates cells with ';' (several labels in one
    cell, split on ',' or, in a quoted cell, ';'); ',' stays the format whenever every row reads with it."""
    rows = [("file", "labels"), ("pics/000012.jpg", "car"), ("pics/000017.jpg", "horse,person")]
    rows.append(("pics/000023.jpg", "bicycle;person"))
    _excel(images / "train.csv", rows, delimiter=";")
    text = (images / "train.csv").read_bytes().decode("utf-8-sig")
    assert "pics/000017.jpg;horse,person\r\n" in text
    assert 'pics/000023.jpg;"bicycle;person"\r\n' in text
    run(images, tmp_path / "out", format="csv", splits=["train"])
    assert _labels(tmp_path / "out") == [
        ("pics/000012.jpg", ["car"]),
        ("pics/000017.jpg", ["horse", "person"]),
        ("pics/000023.jpg", ["bicycle", "person"]),
    ]
    # ',' rows whose label cells hold ';' read two cells with ',' as well: ',' wins
    (images / "train.csv").write_text("pics/000012.jpg,car;person\npics/000017.jpg,horse\n")
    run(images, tmp_path / "o2", format="csv", splits=["train"])
    assert _labels(tmp_path / "o2")[0] == ("pics/000012.jpg", ["car", "person"])
    # rows that read as two cells with neither: the ',' reading's error, naming the line
    (images / "train.csv").write_text("pics/000012.jpg;car\npics/000017.jpg,horse,person\n")
    with pytest.raises(DatasetError, match=r"train\.csv:1: row 'pics/000012\.jpg;car' has no"):
        run(images, tmp_path / "o3", format="csv", splits=["train"])


def test_row_errors_name_the_csv_line(images: Path, tmp_path: Path) -> None:
    """A missing image, a repeated row and an unknown class name each name the CSV line (and
    the split); a CRLF file numbers its lines as an editor does."""
    rows = [*ROWS, ("pics/missing.jpg", "car")]
    _excel(images / "train.csv", rows)
    with pytest.raises(
        DatasetError,
        match=r"train\.csv:4: .*pics/missing\.jpg: image file is missing \(split 'train'\)",
    ):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    _excel(images / "train.csv", [*ROWS, ("pics/000012.jpg", "car")])
    with pytest.raises(
        DatasetError, match=r"train\.csv:4: pics/000012\.jpg: image is listed twice"
    ):
        run(images, tmp_path / "out", format="csv", splits=["train"])
    _excel(images / "train.csv", [*ROWS, ("pics/000023.jpg", "zebra")])
    with pytest.raises(DatasetError, match=r"train\.csv:4: pics/000023\.jpg: unknown class names"):
        run(
            images,
            tmp_path / "out",
            format="csv",
            splits=["train"],
            classes=["car", "horse", "person"],
        )
    assert not (tmp_path / "out").exists()
    # skipped with --skip-bad: the record keeps the line
    _excel(images / "train.csv", rows)
    summary = run(images, tmp_path / "out", format="csv", splits=["train"], skip_bad=True)
    assert summary["train"]["skipped"] == 1
    skipped = (tmp_path / "out" / "train.skipped.json").read_text()
    assert "train.csv:4" in skipped


def test_not_utf8_names_the_file_and_the_fix(images: Path, tmp_path: Path) -> None:
    (images / "train.csv").write_bytes("pics/000012.jpg,caf\xe9\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"train\.csv: not UTF-8 text.*CSV UTF-8"):
        run(images, tmp_path / "out", format="csv", splits=["train"])
