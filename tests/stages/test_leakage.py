"""Leakage guard: the training side never sees a ground-truth box.

1. The data stage's training-side artifact (``<split>.json``) carries no boxes, and the contract
   reader the training stages use (``contracts.load_split``) rejects anything that does --
   including the eval-only ``<split>_gt.json`` itself.
2. A static check over every module of the package: each one is training side unless
   :data:`GT_SIDE` names it (the data stage's loaders, ``evaluate``, ``report``, the evaluation
   and report packages: the readers of ground truth, each with why), so a new package is checked
   from its first line. No training-side module names the eval-only file (``_gt.json``), VOC
   ``Annotations``, a ``load_gt`` reader, parses XML, imports the data stage's loaders
   (``wsod.datasets.{voc,custom,demo,base}``, ``wsod.stages.data``), which read boxes, or
   imports the eval-only ground-truth readers (``wsod.evaluation.{gt,localization,scoring,
   coco,caveats}``, ``gt_by_image``, ``gt_to_arrays``, ``read_reference_boxes``).
   :data:`GT_NAMED_IN_HELP` lists the two command modules whose help shows the labelled
   reference and diagnostic options with a ``*_gt.json`` argument (only that pattern).
3. One named exception: ``wsod/denoise/diagnostics.py``, the labelled diagnostic that scores
   pseudo labels against reference boxes given explicitly (``wsod denoise --quality-gt``). It is
   exempt from 2, and it is imported by exactly one training-side place: the de-noise stage's
   diagnostic function (``_diagnose``), never at module level and never by another module.
4. The Makefile: a rule that names a ``*_gt.json`` or ``Annotations`` runs ``wsod data``,
   ``evaluate``, ``report``, the reference (``strong --fully-supervised-gt``) or the diagnostic
   (``denoise --quality-gt``); no training rule has ground truth among its prerequisites.
5. At run time (:mod:`leak_audit`, an audit hook in every Python process a test starts): a real
   training-side command on real data opens no ground truth, and a process that does is
   reported. The end-to-end ``make all`` test (tests/test_voc_pipeline.py) runs the whole
   pipeline under the same hook.
6. ORACLE benchmarks (:data:`ORACLE_BENCHMARKS`: train labels built from the training ground
   truth, issue 53) are allowed to read it by the run-time guard (``leak_audit.ALLOWED``) and
   reached by no make rule: the Makefile never names them nor the files they write.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wsod import contracts
from wsod.stages.data import run

REPO = Path(__file__).resolve().parents[2]
# Modules that may name ground truth (prefix match), and why. Every other module of the
# package, whichever package it is in, is checked as training side.
GT_SIDE = {
    "wsod/datasets/__init__.py": "re-exports the data stage's loaders",
    "wsod/datasets/base.py": "data stage: the dataset record with boxes",
    "wsod/datasets/voc.py": "data stage: reads VOC Annotations XML",
    "wsod/datasets/custom.py": "data stage: reads a user's box files",
    "wsod/datasets/coco_files.py": "data stage: reads a COCO json's boxes (format='coco')",
    "wsod/datasets/demo.py": "data stage: generates the demo boxes",
    "wsod/datasets/download.py": "data stage: unpacks the VOC tarballs",
    "wsod/stages/data.py": "writes the eval-only <split>_gt.json",
    "wsod/stages/evaluate.py": "scores detections against ground truth",
    "wsod/stages/report.py": "draws ground truth in the report's gallery",
    "wsod/commands/data.py": "the data stage's command",
    "wsod/commands/evaluate.py": "the evaluate stage's command",
    "wsod/commands/report.py": "the report stage's command",
    "wsod/evaluation/": "eval-only metric math and ground-truth readers",
    "wsod/report/": "the report: metrics tables, gallery with ground truth",
    "wsod/denoise/diagnostics.py": "the labelled diagnostic (rule 3)",
    "wsod/contracts/": "defines and validates every format, the eval-only gt file's too, and "
    "tells a split's ground truth from pseudo labels (reads only what a stage hands it)",
}
# command modules whose --help examples name a *_gt.json for a labelled option (the reference,
# the diagnostic); only the file-name pattern is allowed there
GT_NAMED_IN_HELP = {
    "wsod/commands/strong.py": "--fully-supervised-gt (the reference)",
    "wsod/commands/denoise.py": "--quality-gt (the diagnostic)",
}
# the labelled diagnostic allowed to read reference boxes, and the one function that imports it
DIAGNOSTICS = "wsod/denoise/diagnostics.py"
DIAGNOSTICS_MODULE = "wsod.denoise.diagnostics"
DIAGNOSTIC_PATH = ("wsod/stages/denoise.py", "_diagnose")
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


def _gt_side(rel: str) -> bool:
    return any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in GT_SIDE)


def training_side_files() -> list[Path]:
    """Every module of the package that :data:`GT_SIDE` does not name."""
    return [
        p
        for p in sorted((REPO / "wsod").rglob("*.py"))
        if not _gt_side(p.relative_to(REPO).as_posix())
    ]


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


def _offences(path: Path, allowed: frozenset[str] = frozenset()) -> list[str]:
    text = path.read_text()
    out = []
    for what, pattern in FORBIDDEN.items():
        if what in allowed:
            continue
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append(f"{path.relative_to(REPO)}:{line}: {what} ({m.group(0)!r})")
    return out


def test_training_side_modules_never_reach_ground_truth() -> None:
    checked, offences = [], []
    for path in training_side_files():
        rel = path.relative_to(REPO).as_posix()
        if rel in GT_NAMED_IN_HELP:
            continue  # test below
        checked.append(rel)
        offences += _offences(path)
    assert not offences, "training-side code reaches ground truth:\n" + "\n".join(offences)
    # every package is checked, the training side's and any new one (wsod/detections: importers)
    packages = {Path(c).parts[1] for c in checked}
    assert {"stages", "training", "proposals", "denoise", "models", "detections", "commands",
            "pipeline"} <= packages  # fmt: skip
    assert {"wsod/cli.py", "wsod/pipeline/core.py", "wsod/datasets/weak_dataset.py"} <= set(checked)
    # the guard must be able to fail: it catches each pattern in a planted snippet
    planted = (
        "import xml.etree.ElementTree as ET\nfrom wsod.datasets.voc import load_voc_split"
        "\nroot / 'Annotations'\nload_gt('val_gt.json')\n"
        "from wsod.evaluation.gt import gt_by_image\n"
    )
    assert all(p.search(planted) for p in FORBIDDEN.values())
    print(f"leakage guard checked {len(checked)} training-side files: {checked}")


def test_gt_side_exemptions_are_real_and_named_exactly() -> None:
    """Each exemption names an existing module that does reach ground truth (no stale names),
    and the two command modules name the gt file in their help only."""
    for key, why in GT_SIDE.items():
        paths = sorted((REPO / key).rglob("*.py")) if key.endswith("/") else [REPO / key]
        assert paths and all(p.is_file() for p in paths), f"{key} ({why}) does not exist"
    for rel in GT_NAMED_IN_HELP:
        path = REPO / rel
        assert _offences(path), f"{rel} no longer names ground truth: drop the exemption"
        assert not _offences(path, allowed=frozenset({"eval-only gt file"})), _offences(path)
        text = path.read_text()
        assert GT_NAMED_IN_HELP[rel].split()[0] in text


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


# ----------------------------------------------------------------------------- the Makefile
GT_TEXT = re.compile(r"_gt\.json|\bAnnotations\b")
# the rules allowed to name ground truth: their wsod command and, if any, the flag it needs
MAKE_ALLOWED = {"data": None, "evaluate": None, "report": None}
MAKE_LABELLED = {"strong": "--fully-supervised-gt", "denoise": "--quality-gt"}


def make_rules(text: str) -> list[tuple[str, str, str]]:
    """``(targets, prerequisites, recipe)`` of each rule (continued lines joined; ``define``
    blocks included, with their ``$$``)."""
    text = re.sub(r"\\\n\s*", " ", text)
    rules, current = [], None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            current[2] += line.strip() + "\n"
            continue
        m = re.match(r"^([^\s#=:][^=:]*?)\s*&?:(?!=)(.*)$", line)
        current = [m.group(1), m.group(2).split("#")[0], ""] if m else None  # no comment
        if current is not None:
            rules.append(current)
    return [tuple(r) for r in rules]


def makefile_offences(text: str) -> list[str]:
    """Rules that name ground truth without being data, evaluate, report, the reference or the
    diagnostic."""
    out = []
    for targets, prereqs, recipe in make_rules(text):
        if not GT_TEXT.search(prereqs + recipe):
            continue
        commands = set(re.findall(r"\$\$?\(WSOD\) (\w+)|-m wsod (\w+)", recipe))
        commands = {a or b for a, b in commands}
        ok = bool(commands) and all(
            c in MAKE_ALLOWED or (c in MAKE_LABELLED and MAKE_LABELLED[c] in recipe)
            for c in commands
        )
        if not ok:
            out.append(f"{targets}: {sorted(commands)} names ground truth")
    return out


def test_makefile_gives_ground_truth_to_the_allowed_rules_only() -> None:
    text = (REPO / "Makefile").read_text()
    assert not makefile_offences(text), makefile_offences(text)
    named = [r[0] for r in make_rules(text) if GT_TEXT.search(r[1] + r[2])]
    # the check ran on the real rules: the reference, evaluate, report, the ablation (the data
    # rule makes the gt files: they are its targets, not its inputs)
    assert sorted(named) == [
        "$(EVAL)/metrics.json",
        "$(FSDDIR)/val_dets.json",
        "$(REPORT)/report.md",
        "ablate",
    ]
    # and it fails on a training rule given the eval-only file (planted)
    weak = "$(WEAK)/weak_model.json: $(DATA)/train.json"
    assert weak in text
    planted = text.replace(weak, f"{weak} $(DATA)/train_gt.json", 1)
    assert makefile_offences(planted) == ["$(WEAK)/weak_model.json: ['weak'] names ground truth"]


# ----------------------------------------------------------------------------- at run time
def test_training_side_command_opens_no_ground_truth_at_run_time(
    data_out: Path, tmp_path: Path
) -> None:
    """A real ``wsod proposals`` (whole-image boxes) on the 6-image split, beside its
    ``train_gt.json``, under the audit hook; and a process that does open ground truth, to show
    that the hook runs in the started processes and reports an offence."""
    from leak_audit import audited_env, offences, read_log

    log = tmp_path / "audit.jsonl"
    env = audited_env({**os.environ, "PYTHONPATH": str(REPO)}, log)
    cmd = [sys.executable, "-m", "wsod", "proposals", "--split", str(data_out / "train.json")]
    cmd += ["--out", str(tmp_path / "whole.pkl"), "--method", "whole_image"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "whole.pkl").is_file()
    assert offences(read_log(log)) == [], read_log(log)
    # the hook is live: a process that reads the eval-only file is recorded and reported
    gt = data_out / "train_gt.json"
    code = f"import json; json.load(open({str(gt)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = read_log(log)
    assert [(r["path"], r["write"]) for r in rows] == [(str(gt), False)]
    assert len(offences(rows)) == 1 and "read" in offences(rows)[0]


# ----------------------------------------------------------------------------- ORACLE benchmarks
# benchmarks that build TRAINING labels from the training ground truth (labelled ORACLE
# diagnostics): the run-time guard allows them, no make rule runs them or reads their output
ORACLE_BENCHMARKS = ("benchmarks/oracle_labels.py",)
ORACLE_TEXT = re.compile(r"oracle", re.IGNORECASE)  # the scripts and every file they write


def makefile_oracle_offences(text: str) -> list[str]:
    """Rules whose targets, prerequisites or recipe name an ORACLE benchmark or its files."""
    return [
        f"{targets}: reaches an ORACLE benchmark"
        for targets, prereqs, recipe in make_rules(text)
        if ORACLE_TEXT.search(targets + prereqs + recipe)
    ]


def test_no_make_target_reaches_the_oracle_benchmarks() -> None:
    from leak_audit import ALLOWED

    for rel in ORACLE_BENCHMARKS:
        text = (REPO / rel).read_text()
        assert text.startswith('"""ORACLE DIAGNOSTIC'), f"{rel}: its docstring must say ORACLE"
        assert FORBIDDEN["ground-truth readers"].search(text), f"{rel} no longer reads gt"
        assert ALLOWED[Path(rel).name] is None  # the run-time guard knows it as allowed
    makefile = (REPO / "Makefile").read_text()
    assert not makefile_oracle_offences(makefile), makefile_oracle_offences(makefile)
    assert not ORACLE_TEXT.search(makefile)  # nor through a variable
    # the check fails on a rule that runs the benchmark or trains on what it wrote (planted)
    bench = "\t$(PY) benchmarks/demo_dataset_speed.py\n"
    assert bench in makefile
    ran = makefile.replace(bench, bench + "\t$(PY) benchmarks/oracle_labels.py labels\n", 1)
    assert makefile_oracle_offences(ran) == ["bench: reaches an ORACLE benchmark"]
    strong = "$(WSOD) strong --pipeline $(STAGE_PIPELINE) --pseudo-labels $<"
    assert strong in makefile
    trained = makefile.replace(strong, strong.replace("$<", "$(RUN)/o/oracle_snapped.json"), 1)
    assert makefile_oracle_offences(trained) == [
        "$(STRONG)/val_dets.json: reaches an ORACLE benchmark"
    ]
