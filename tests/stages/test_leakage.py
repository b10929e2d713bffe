"""Leakage guard: the training side never sees a ground-truth box.

1. The data stage's training-side artifact (``<split>.json``) carries no boxes, and the contract
   reader the training stages use (``contracts.load_split``) rejects anything that does --
   including the eval-only ``<split>_gt.json`` itself.
2. A static check over the training-side modules (whichever exist now: ``wsod/stages/{proposals,
   weak,denoise,strong}.py``, ``wsod/proposals``, ``wsod/denoise``, ``wsod/models`` and any
   training-side dataset in ``wsod/datasets`` such as ``weak_dataset.py``): none of them names
   the eval-only file (``_gt.json``), VOC ``Annotations``, a ``load_gt`` reader, parses XML, or
   imports the data stage's loaders (``wsod.datasets.{voc,custom,demo,base}``,
   ``wsod.stages.data``), which read boxes.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from wsod import contracts
from wsod.stages.data import run

REPO = Path(__file__).resolve().parents[2]
TRAINING_SIDE = [
    *(f"wsod/stages/{s}.py" for s in ("proposals", "weak", "denoise", "strong")),
    "wsod/proposals",
    "wsod/denoise",
    "wsod/models",
]
# wsod/datasets holds the data stage's box-reading loaders (not checked) and may hold
# training-side datasets (e.g. weak_dataset.py, checked)
DATA_STAGE_LOADERS = {"__init__.py", "base.py", "voc.py", "custom.py", "demo.py", "download.py"}
FORBIDDEN = {
    "eval-only gt file": re.compile(r"_gt\.json"),
    # the VOC folder, not mmdet's ``LoadAnnotations`` transform (which loads pseudo boxes)
    "VOC Annotations folder": re.compile(r"\bAnnotations\b"),
    "gt loader": re.compile(r"load_gt"),
    "XML parsing": re.compile(r"xml\.etree|ElementTree|minidom|lxml|xmltodict|parse_voc_xml"),
    "data-stage loaders": re.compile(
        r"wsod\.datasets\.(voc|custom|demo|base)\b"
        r"|from\s+wsod\.datasets\s+import\s+[^\n]*\b(voc|custom|demo|base)\b"
        r"|wsod\.stages\.data\b|from\s+wsod\.stages\s+import\s+[^\n]*\bdata\b"
    ),
}


def training_side_files() -> list[Path]:
    files: list[Path] = []
    for rel in TRAINING_SIDE:
        p = REPO / rel
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(p.rglob("*.py")))
    files.extend(
        p
        for p in sorted((REPO / "wsod" / "datasets").glob("*.py"))
        if p.name not in DATA_STAGE_LOADERS
    )
    return files


@pytest.fixture(scope="module")
def data_out(voc_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("leak") / "data"
    run(voc_root, out, splits=("train", "val"), limit=6)
    return out


@pytest.mark.parametrize("split", ["train", "val"])
def test_split_artifact_has_no_boxes(data_out: Path, split: str) -> None:
    path = data_out / f"{split}.json"
    text = path.read_text()
    raw = json.loads(text)
    assert len(raw["images"]) == 6  # the check ran on real data-stage output
    assert set(raw) == {"info", "images", "categories"}
    for key in ("bbox", "annotations", "segmentation", "xmin", "difficult", "area"):
        assert f'"{key}"' not in text, f"{path} mentions {key!r}"
    for im in raw["images"]:
        assert set(im) == {"id", "file_name", "width", "height", "labels"}
    contracts.load_split(path)  # passes the training-side reader
    gt = json.loads((data_out / f"{split}_gt.json").read_text())
    assert gt["annotations"], "the eval-only file does hold the boxes"


def test_training_reader_rejects_boxes(data_out: Path) -> None:
    split = json.loads((data_out / "train.json").read_text())
    with pytest.raises(contracts.ContractError, match="annotations"):
        contracts.load_split(data_out / "train_gt.json")
    bad = copy.deepcopy(split)
    bad["annotations"] = []
    with pytest.raises(contracts.ContractError, match="annotations"):
        contracts.validate_split(bad)
    for key in ("bbox", "bboxes", "boxes", "gt_bboxes", "instances"):
        bad = copy.deepcopy(split)
        bad["images"][0][key] = [[0, 0, 10, 10]]
        with pytest.raises(contracts.ContractError, match="must not carry boxes"):
            contracts.validate_split(bad)


def test_training_side_modules_never_reach_ground_truth() -> None:
    checked, offences = [], []
    for path in training_side_files():
        text = path.read_text()
        checked.append(path.relative_to(REPO).as_posix())
        for what, pattern in FORBIDDEN.items():
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                offences.append(f"{path.relative_to(REPO)}:{line}: {what} ({m.group(0)!r})")
    assert not offences, "training-side code reaches ground truth:\n" + "\n".join(offences)
    # the guard must be able to fail: it catches each pattern in a planted snippet
    planted = (
        "import xml.etree.ElementTree as ET\nfrom wsod.datasets.voc import load_voc_split"
        "\nroot / 'Annotations'\nload_gt('val_gt.json')\n"
    )
    assert all(p.search(planted) for p in FORBIDDEN.values())
    print(f"leakage guard checked {len(checked)} training-side files: {checked}")
