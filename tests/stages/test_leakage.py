"""Leakage guard: the training side never sees a ground-truth box.

1. The data stage's training-side artifact (``<split>.json``) carries no boxes, and the contract
   reader the training stages use (``contracts.load_split``) rejects anything that does --
   including the eval-only ``<split>_gt.json`` itself.
2. A static check over the training-side modules (whichever exist now: ``wsod/stages/{proposals,
   weak,denoise,strong}.py``, ``wsod/training``, ``wsod/proposals``, ``wsod/denoise``,
   ``wsod/models`` and any training-side dataset in ``wsod/datasets`` such as
   ``weak_dataset.py``): none of them names the eval-only file (``_gt.json``), VOC
   ``Annotations``, a ``load_gt`` reader, parses XML, imports the data stage's loaders
   (``wsod.datasets.{voc,custom,demo,base}``, ``wsod.stages.data``), which read boxes, or
   imports the eval-only ground-truth readers (``wsod.evaluation.{gt,localization,scoring,
   coco,caveats}``, ``gt_by_image``, ``gt_to_arrays``, ``read_reference_boxes``).
3. One named exception: ``wsod/denoise/diagnostics.py``, the labelled diagnostic that scores
   pseudo labels against reference boxes given explicitly (``wsod denoise --quality-gt``). It is
   exempt from 2, and it is imported by exactly one training-side place: the de-noise stage's
   diagnostic function (``_diagnose``), never at module level and never by another module.
"""

from __future__ import annotations

import ast
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
    "wsod/training.py",
    "wsod/training",
    "wsod/proposals",
    "wsod/denoise",
    "wsod/models",
]
# the labelled diagnostic allowed to read reference boxes, and the one function that imports it
DIAGNOSTICS = "wsod/denoise/diagnostics.py"
DIAGNOSTICS_MODULE = "wsod.denoise.diagnostics"
DIAGNOSTIC_PATH = ("wsod/stages/denoise.py", "_diagnose")
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
    # the eval-only ground-truth readers and what builds on them (the VOC math and the mmengine
    # metric in wsod.evaluation.{voc,metric} read no file and stay allowed)
    "ground-truth readers": re.compile(
        r"wsod\.evaluation\.(gt|localization|scoring|coco|caveats)\b"
        r"|from\s+wsod\.evaluation\s+import\s+[^\n]*\b(gt|localization|scoring|coco|caveats)\b"
        r"|\b(gt_by_image|gt_to_arrays|read_reference_boxes)\b"
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
        if path.relative_to(REPO).as_posix() == DIAGNOSTICS:
            continue  # the one labelled diagnostic (test below)
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
        "from wsod.evaluation.gt import gt_by_image\n"
    )
    assert all(p.search(planted) for p in FORBIDDEN.values())
    print(f"leakage guard checked {len(checked)} training-side files: {checked}")


def _imports(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """(imported module name, node) of every import in a module, at any depth; ``from a import
    b`` yields both ``a`` and ``a.b`` (``b`` may be a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, node))
            found += [(f"{node.module}.{alias.name}", node) for alias in node.names]
    return found


def _importers_of_diagnostics(files: list[Path]) -> list[tuple[str, str | None]]:
    """(file, enclosing function or None) of every import of the diagnostics module."""
    out = []
    for path in files:
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for name, node in _imports(tree):
            if name != DIAGNOSTICS_MODULE:
                continue
            func = parents.get(node)
            while func is not None and not isinstance(func, ast.FunctionDef):
                func = parents.get(func)
            rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
            out.append((rel, func.name if func else None))
    return out


def test_only_the_denoise_diagnostic_path_imports_the_diagnostics_module(tmp_path: Path) -> None:
    diag = REPO / DIAGNOSTICS
    assert diag.is_file(), f"{DIAGNOSTICS} is the named diagnostics module; it must exist"
    assert "LABELLED DIAGNOSTIC" in diag.read_text()[:200], "its docstring must say what it is"
    # it does read reference boxes: the exemption is real, not a stale name
    assert FORBIDDEN["ground-truth readers"].search(diag.read_text())
    importers = _importers_of_diagnostics(training_side_files())
    assert importers == [DIAGNOSTIC_PATH], (
        f"{DIAGNOSTICS_MODULE} may be imported only inside {DIAGNOSTIC_PATH[1]}() of "
        f"{DIAGNOSTIC_PATH[0]}; found {importers}"
    )
    # the check can fail: module-level imports in either spelling are found, outside a function
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import wsod.denoise.diagnostics\nfrom wsod.denoise import diagnostics\n"
        "def f():\n    from wsod.denoise.diagnostics import quality\n"
    )
    assert _importers_of_diagnostics([planted]) == [
        ("planted.py", None),
        ("planted.py", None),
        ("planted.py", "f"),
    ]
