"""``benchmarks/oracle_labels.py``, the ORACLE diagnostic of issue 53, on real VOC 2007 train
images (their split and real boxes from ``wsod data``) with pseudo boxes made by hand around the
real boxes: what each variant keeps, the label files trained on as pseudo labels, the table
step, the printed commands, and the run-time leakage guard allowing it (and only it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from leak_audit import audited_env, offences, read_log

from benchmarks import oracle_commands, oracle_table
from benchmarks import oracle_labels as oracle
from wsod import contracts

REPO = Path(__file__).resolve().parents[1]
# sheep x3, sheep x3, chair x3 (+ person labelled without a box), chair x6 + table,
# person x3 + chair, person labelled on an image without any box, chair x7 (no pseudo box)
IDS = ["000416", "000900", "000331", "000550", "000089", "001627", "000147"]
SHEEP, CHAIR, TABLE, PERSON = 17, 9, 11, 15


@pytest.fixture(scope="module")
def run_dir(voc_root: Path, tmp_path_factory) -> Path:
    """A run folder (``data/train.json``, ``data/train_gt.json``, ``denoise/pseudo_train.json``)
    on the real images of :data:`IDS`, their official per-class label lists included."""
    from wsod.stages.data import run as data_run

    tmp = tmp_path_factory.mktemp("oracle")
    root = tmp / "VOC2007"
    (root / "ImageSets" / "Main").mkdir(parents=True)
    for name in ("JPEGImages", "Annotations"):
        (root / name).symlink_to(voc_root / name)
    for lst in (voc_root / "ImageSets" / "Main").glob("*_train.txt"):
        (root / "ImageSets" / "Main" / lst.name).symlink_to(lst)
    (root / "ImageSets" / "Main" / "train.txt").write_text("\n".join(IDS) + "\n")
    run = tmp / "run"
    with pytest.warns(UserWarning, match="has no image of class"):  # 7 images: 5 classes
        data_run(root, run / "data", splits=("train",))
    split = json.loads((run / "data" / "train.json").read_text())
    gt = json.loads((run / "data" / "train_gt.json").read_text())
    (run / "denoise").mkdir()
    pseudo = _pseudo_labels(split, gt)
    (run / "denoise" / "pseudo_train.json").write_text(json.dumps(pseudo))
    return run


def _reals(gt: dict, stem: str, cat: int) -> np.ndarray:
    image = int(stem)
    return np.array([a["bbox"] for a in gt["annotations"]
                     if a["image_id"] == image and a["category_id"] == cat], np.float64)  # fmt: skip


def _grow(xywh, f: float) -> list[float]:
    x, y, w, h = xywh
    return [x - f * w, y - f * h, w * (1 + 2 * f), h * (1 + 2 * f)]


def _iou(a, b) -> float:
    """IoU of two xywh boxes (written here, not the module's box math)."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def _pseudo_labels(split: dict, gt: dict) -> dict:
    """Hand-made pseudo boxes around the real ones (what each is: its comment), an ignore region,
    in the de-noise stage's format (the pseudo labels list every image of the split)."""
    sheep = _reals(gt, "000416", SHEEP)
    chairs, table = _reals(gt, "000550", CHAIR), _reals(gt, "000550", TABLE)
    people = _reals(gt, "000089", PERSON)
    x1, y1 = np.minimum(chairs[1, :2], chairs[2, :2])
    x2, y2 = np.maximum(chairs[1, :2] + chairs[1, 2:], chairs[2, :2] + chairs[2, 2:])
    boxes = [
        (416, SHEEP, _grow(sheep[1], 0.1)),  # loose around the 2nd sheep: correct
        (900, SHEEP, [0, 0, 8, 8]),  # a corner, no sheep: wrong
        (331, CHAIR, list(_reals(gt, "000331", CHAIR)[-1] + [2, 2, 0, 0])),  # correct
        (331, PERSON, [10, 10, 60, 120]),  # labelled, no real person box in the export
        (550, CHAIR, [x1, y1, x2 - x1, y2 - y1]),  # two chairs in one box: wrong
        (550, TABLE, list(table[0])),  # correct
        (89, PERSON, list(people[0])),  # correct
        (89, PERSON, _grow(people[2], 0.05)),  # correct
        (1627, PERSON, [50, 50, 100, 200]),  # labelled, no box at all in the image
    ]
    anns = [{"id": i + 1, "image_id": im, "category_id": c, "bbox": [float(v) for v in b],
             "area": b[2] * b[3], "iscrowd": 0, "score": 0.9 - 0.05 * i}
            for i, (im, c, b) in enumerate(boxes)]  # fmt: skip
    anns.append({"id": 99, "image_id": 900, "category_id": SHEEP, "bbox": [100, 100, 50, 50],
                 "area": 2500, "iscrowd": 1, "score": 0.5})  # fmt: skip  # an ignore region
    info = {"split": "train", "data_root": split["info"]["data_root"]}
    return {"info": info, "images": split["images"], "categories": split["categories"],
            "annotations": anns}  # fmt: skip


def _load(run: Path) -> tuple[dict, dict, dict]:
    read = [run / "denoise/pseudo_train.json", run / "data/train.json", run / "data/train_gt.json"]
    return tuple(json.loads(p.read_text()) for p in read)


def _boxes(labels: dict, image: int) -> list[tuple[int, list[float]]]:
    return sorted((a["category_id"], [round(v, 2) for v in a["bbox"]])
                  for a in labels["annotations"] if a["image_id"] == image and not a["iscrowd"])  # fmt: skip


def _r(box) -> list[float]:
    return [round(float(v), 2) for v in box]


def _largest(boxes: np.ndarray) -> list[float]:
    return _r(boxes[np.argmax(boxes[:, 2] * boxes[:, 3])])


def check_one_real_box(a: dict, pseudo: dict, gt: dict) -> None:
    """(a): one real box per labelled class on every image of the split (module docstring)."""
    sheep, chairs = _reals(gt, "000416", SHEEP), _reals(gt, "000550", CHAIR)
    assert _boxes(a, 416) == [(SHEEP, _r(sheep[1]))]  # the overlapped one, not the first
    assert _boxes(a, 900) == [(SHEEP, _largest(_reals(gt, "000900", SHEEP)))]  # no overlap
    assert _boxes(a, 331) == [(CHAIR, _r(_reals(gt, "000331", CHAIR)[-1]))]  # person: no box
    bigger = chairs[1] if chairs[1, 2] * chairs[1, 3] >= chairs[2, 2] * chairs[2, 3] else chairs[2]
    assert _boxes(a, 550) == sorted([(CHAIR, _r(bigger)), (TABLE, _r(_reals(gt, "000550", TABLE)[0]))])  # fmt: skip
    people = _reals(gt, "000089", PERSON)
    assert _boxes(a, 89) == sorted([(CHAIR, _largest(_reals(gt, "000089", CHAIR))), (PERSON, _r(people[0]))])  # fmt: skip
    assert _boxes(a, 1627) == []  # a labelled person without a real box
    # no pseudo box (de-noising dropped the image): every image of the split counts
    assert _boxes(a, 147) == [(CHAIR, _largest(_reals(gt, "000147", CHAIR)))]


def check_snapped(b: dict, pseudo: dict, gt: dict) -> None:
    """(b): every pseudo box snapped, same count, same images."""
    own = [x for x in pseudo["annotations"] if not x["iscrowd"]]
    assert len([x for x in b["annotations"] if not x["iscrowd"]]) == len(own)
    assert _boxes(b, 416) == [(SHEEP, _r(_reals(gt, "000416", SHEEP)[1]))]
    assert _boxes(b, 900) == [(SHEEP, _largest(_reals(gt, "000900", SHEEP)))]
    chairs = _reals(gt, "000550", CHAIR)
    bigger = chairs[1] if chairs[1, 2] * chairs[1, 3] >= chairs[2, 2] * chairs[2, 3] else chairs[2]
    assert _boxes(b, 550) == sorted([(CHAIR, _r(bigger)), (TABLE, _r(_reals(gt, "000550", TABLE)[0]))])  # fmt: skip
    people = _reals(gt, "000089", PERSON)
    assert _boxes(b, 89) == sorted([(PERSON, _r(people[0])), (PERSON, _r(people[2]))])
    # a pseudo box whose class has no real box in its image stays as it is
    chair = _r(_reals(gt, "000331", CHAIR)[-1])
    assert _boxes(b, 331) == sorted([(CHAIR, chair), (PERSON, [10.0, 10.0, 60.0, 120.0])])
    assert _boxes(b, 1627) == [(PERSON, [50.0, 50.0, 100.0, 200.0])]
    assert [x["bbox"] for x in b["annotations"] if x["iscrowd"]] == [[100, 100, 50, 50]]


def check_correct_only(c: dict, pseudo: dict, gt: dict) -> None:
    """(c): exactly the pseudo boxes with IoU >= 0.5 with a real box of their class."""
    correct = [x for x in pseudo["annotations"] if not x["iscrowd"] and any(
        _iou(x["bbox"], r) >= 0.5 for r in _reals(gt, f"{x['image_id']:06d}", x["category_id"]))]  # fmt: skip
    assert len(correct) == 5  # the hand-made boxes marked correct
    assert sorted(_boxes(c, i) for i in {x["image_id"] for x in c["annotations"]}) == sorted(
        _boxes({"annotations": correct}, i) for i in {x["image_id"] for x in correct})  # fmt: skip
    assert _boxes(c, 550) == [(TABLE, _r(_reals(gt, "000550", TABLE)[0]))]  # the table stays
    # 000900 is left without a box: its ignore region goes with it
    assert not [x for x in c["annotations"] if x["image_id"] == 900]


def check_one_largest_box(a0: dict, pseudo: dict, gt: dict) -> None:
    """(a0): the largest real box of every labelled class with one, on every image, whatever the
    pseudo boxes overlap; no ignore region (there are no pseudo labels to take one from)."""
    labelled = {(im["id"], c) for im in pseudo["images"] for c in im.get("labels", ())}
    pairs = {(x["image_id"], x["category_id"]) for x in gt["annotations"]}
    want = {i: [] for i in {x["image_id"] for x in gt["annotations"]}}
    for image, c in sorted(pairs):
        if not labelled or (image, c) in labelled:
            want[image].append((c, _largest(_reals(gt, f"{image:06d}", c))))
    assert {i: _boxes(a0, i) for i in want} == {i: sorted(v) for i, v in want.items()}
    sheep = _reals(gt, "000416", SHEEP)
    assert _boxes(a0, 416) == [(SHEEP, _largest(sheep))] != [(SHEEP, _r(sheep[1]))]  # not (a)'s
    assert _boxes(a0, 1627) == [] and not [x for x in a0["annotations"] if x["iscrowd"]]
    assert {x["score"] for x in a0["annotations"]} == {1.0}


CHECKS = {"one_real_box": check_one_real_box, "snapped": check_snapped,
          "correct_only": check_correct_only, "one_largest_box": check_one_largest_box}  # fmt: skip


@pytest.mark.parametrize("name", oracle.VARIANTS)
def test_variant_on_real_boxes(run_dir: Path, name: str) -> None:
    pseudo, split, gt = _load(run_dir)
    variants = oracle.build_variants(pseudo, split, gt)
    CHECKS[name](variants[name], pseudo, gt)
    assert variants[name]["images"] == pseudo["images"]
    assert variants[name]["info"]["oracle"]["variant"] == name


def _first_box(boxes, reals):
    return 0, 1.0  # a planted fault: the first real box of the class, whatever overlaps


@pytest.mark.parametrize(
    "name, fault",
    [("one_real_box", ("most_overlapped", _first_box)), ("snapped", ("most_overlapped", _first_box)),
     ("correct_only", ("CORRECT_IOU", 1e-6)), ("one_largest_box", ("most_overlapped", _first_box))],
)  # fmt: skip
def test_planted_faults_are_caught(run_dir: Path, name: str, fault, monkeypatch) -> None:
    pseudo, split, gt = _load(run_dir)
    monkeypatch.setattr(oracle, *fault)
    variants = oracle.build_variants(pseudo, split, gt)
    with pytest.raises(AssertionError):
        CHECKS[name](variants[name], pseudo, gt)


def test_label_files_train_as_pseudo_labels(run_dir: Path, tmp_path: Path) -> None:
    """The written files pass the pseudo-label validator and the strong stage's reader, say
    ORACLE, and mmdet's CocoDataset of the pipeline's strong config loads their boxes."""
    from mmdet.registry import DATASETS
    from mmdet.utils import register_all_modules
    from mmengine.config import Config

    from wsod.datasets.train_annotations import read_training_boxes
    from wsod.pipeline.core import make_values
    from wsod.training.coco_dataset import set_coco_dataset
    from wsod.utils.io import write_json

    rows = oracle.write_labels(run_dir, tmp_path)
    assert rows["(b) snapped"]["boxes"] == rows["pseudo labels"]["boxes"] == 9
    assert rows["(c) correct only"]["precision"] == 1.0 and rows["real boxes"]["recall"] == 1.0
    assert rows["(c) correct only"]["boxes"] == 5 and rows["(a) one real box"]["boxes"] == 8
    register_all_modules()
    config = make_values(REPO / "pipelines/voc07_cpu.py")["PIPE_STRONG_CONFIG"]
    for name in oracle.VARIANTS:
        path = tmp_path / oracle.variant_file(name)
        labels = contracts.load_pseudo_labels(path)
        meta = json.loads(Path(f"{path}.meta.json").read_text())
        assert "ORACLE" in meta["supervision"] and "ORACLE" in labels["info"]["oracle"]["note"]
        train_ann, classes, root = read_training_boxes(path, False, None)
        ann_path = tmp_path / f"{name}_train_annotations.json"
        write_json(ann_path, train_ann)
        cfg = Config.fromfile(str(REPO / config))
        set_coco_dataset(cfg.train_dataloader.dataset, config, ann_path, root, classes)
        ds = DATASETS.build(cfg.train_dataloader.dataset)
        boxed = {a["image_id"] for a in labels["annotations"]}
        assert sorted(ds.get_data_info(i)["img_id"] for i in range(len(ds))) == sorted(boxed)
        n = sum(len(ds.get_data_info(i)["instances"]) for i in range(len(ds)))
        assert n == len(labels["annotations"])
        assert len(ds[0]["data_samples"].gt_instances) >= 1  # an image decoded, boxes loaded


def _metrics(path: Path, dets: Path, classes: list[str], aps: list[float]) -> None:
    """A small metrics.json as `wsod evaluate` writes it (one detector, AP per class)."""
    per_class = {c: {"class_id": i + 1, "num_gt": 1, "num_dets": 1, "num_tp": 1, "ap_11points": ap,
                     "ap_area": ap, "pr": {"recall": [], "precision": []}}
                 for i, (c, ap) in enumerate(zip(classes, aps, strict=True))}  # fmt: skip
    entry = {"file": str(dets), "num_detections": 1, "mAP_11points": float(np.mean(aps)),
             "mAP_area": float(np.mean(aps)), "coco": {"AP": None}, "per_class": per_class}  # fmt: skip
    metrics = {"split": "train", "gt": "gt", "iou_thr": 0.5, "num_images": 7, "num_gt_boxes": 1,
               "classes": classes, "caveats": [], "gt_note": "", "detectors": {"strong": entry}}  # fmt: skip
    contracts.validate_metrics(metrics)
    path.write_text(json.dumps(metrics))


def _population_sd(values) -> str:  # a planted fault: the n-denominator spread
    return f"{np.mean(values):.1f} ± {np.std(values):.1f}"


def _first_seed_only(specs, gt):  # a planted fault: one seed's detections stand for all
    return REAL_ROW_VALUES(specs[:1], gt)


REAL_ROW_VALUES = oracle_table.row_values


@pytest.mark.parametrize(
    "fault", [None, ("mean_sd", _population_sd), ("row_values", _first_seed_only)]
)
def test_table_of_two_seeds(run_dir: Path, tmp_path: Path, fault, monkeypatch) -> None:
    """The table step on two tiny metric files per row: mean +- sd, Δ to the first row, the
    detection error shares of the detections each entry names (seeds averaged), the per-class
    AP; each planted fault fails the checks."""
    gt_path = run_dir / "data/train_gt.json"
    gt = json.loads(gt_path.read_text())
    classes = [c["name"] for c in gt["categories"]]
    sheep = [a for a in gt["annotations"] if a["category_id"] == SHEEP]
    assert len(sheep) == 6  # 000416 and 000900: three each
    right = [{"image_id": a["image_id"], "category_id": SHEEP, "bbox": a["bbox"], "score": 0.9}
             for a in sheep]  # fmt: skip
    wrong = [dict(d, bbox=[0, 0, 5, 5]) for d in right]
    specs = {}
    rows = (("good", (right, right[:3] + wrong[3:]), (0.4, 0.6)), ("bad", (wrong, wrong), (0.1, 0.1)))  # fmt: skip
    for name, dets, aps in rows:
        specs[name] = []
        for seed, ap in enumerate(aps):
            (tmp_path / f"{name}{seed}.json").write_text(json.dumps(dets[seed]))
            path = tmp_path / f"{name}{seed}_metrics.json"
            _metrics(path, tmp_path / f"{name}{seed}.json", classes, [ap] * len(classes))
            specs[name].append(f"{path}:strong" if seed else str(path))
    out = tmp_path / "table.md"
    argv = ["table", "--gt", str(gt_path), "--row", "good", *specs["good"], "--row", "bad",
            *specs["bad"], "--out", str(out)]  # fmt: skip
    if fault:
        monkeypatch.setattr(oracle_table, *fault)
    assert oracle.main(argv) == 0
    lines = out.read_text().splitlines()
    table = [line.strip("| ").split(" | ") for line in lines if line.startswith("| ")]
    head, good, bad = table
    cells = dict(zip(head, good, strict=True)), dict(zip(head, bad, strict=True))
    checks = [
        cells[0]["mAP 11-pt"] == f"50.0 ± {100 * np.std([0.4, 0.6], ddof=1):.1f}",
        cells[1]["mAP 11-pt"] == "10.0 ± 0.0" and cells[1]["Δ 11-pt"] == "-40.0",
        cells[0]["correct"] == "75.0" and cells[0]["elsewhere"] == "25.0",  # 100 and 50 %
        cells[1]["correct"] == "0.0" and cells[1]["elsewhere"] == "100.0",  # on no sheep
        cells[0]["sheep"] == "50.0" and cells[0]["seeds"] == "2",
    ]
    assert all(checks) == (fault is None), checks
    with pytest.raises(ValueError, match="no detector 'fsd'"):
        oracle_table.read_entry(f"{tmp_path / 'good0_metrics.json'}:fsd")


def test_commands_mirror_the_makefile(tmp_path: Path) -> None:
    from wsod.pipeline.core import make_values

    pipe = "pipelines/voc07_cpu.py"
    lines = oracle_commands.train_commands(
        pipe, "work_dirs/voc07_cpu", "work_dirs/oracle", [0, 1], "bf16"
    )
    config = make_values(REPO / pipe)["PIPE_STRONG_CONFIG"]
    strong = [x for x in lines if " -m wsod strong " in x]
    # 4 variants x 2 seeds, + the pseudo labels and the real boxes on the seed the run lacks
    assert len(strong) == 10 and len([x for x in lines if " -m wsod evaluate " in x]) == 10
    snapped = [x for x in strong if "oracle_snapped.json" in x and "--seed 1 " in x]
    assert len(snapped) == 1 and f"--config {config} " in snapped[0]
    assert "--precision bf16 " in snapped[0] and "--pipeline pipelines/voc07_cpu.py" in snapped[0]
    assert snapped[0].endswith("--infer work_dirs/voc07_cpu/data/val.json:"
                               "work_dirs/oracle/snapped_seed1/val_dets.json")  # fmt: skip
    real = [x for x in strong if "--fully-supervised-gt" in x]
    assert len(real) == 1 and "--seed 1 " in real[0]
    assert "work_dirs/voc07_cpu/eval/metrics.json:fsd" in lines[-1]
    assert lines[-1].index("'pseudo labels'") < lines[-1].index("'(c) correct only'")
    assert lines[-1].index("'(a) one real box'") < lines[-1].index("'(a0) one largest real box'")
    assert "work_dirs/oracle/one_largest_box_seed1/metrics.json" in lines[-1]


def test_the_leakage_guard_allows_the_oracle_and_nothing_else(run_dir: Path, tmp_path) -> None:
    """``labels`` run as a script under the audit hook reads train ground truth, allowed to the
    oracle benchmark; the same accesses by a training command are offences."""
    log = tmp_path / "audit.jsonl"
    env = audited_env({**os.environ, "PYTHONPATH": str(REPO)}, log)
    cmd = [sys.executable, str(REPO / "benchmarks/oracle_labels.py"), "labels", "--run",
           str(run_dir), "--out", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| (b) snapped | 6 | 9 |" in done.stdout
    rows = read_log(log)
    assert any(r["path"].endswith("train_gt.json") for r in rows) and offences(rows) == []
    assert len(offences([dict(r, command="strong") for r in rows])) == len(rows)


def test_one_real_box_and_snapped_differ_where_a_class_has_no_real_box_or_no_pseudo_box(
    run_dir: Path,
) -> None:
    """000331 and 001627 (a labelled person without a real box: (b) keeps the pseudo box, (a)
    gives none), 000089 (two pseudo people, no pseudo chair) and 000147 (no pseudo box: (a) gives
    its chair); elsewhere snapping the one pseudo box of a class is choosing the one real box."""
    pseudo, split, gt = _load(run_dir)
    v = oracle.build_variants(pseudo, split, gt)
    assert oracle.images_differing(v["one_real_box"], v["snapped"]) == 4
    assert oracle.images_differing(v["snapped"], v["snapped"]) == 0


def test_largest_only_needs_no_pseudo_labels(run_dir: Path, tmp_path: Path) -> None:
    """``labels --largest-only`` writes (a0) alone from the split and the real boxes, before any
    pseudo label exists, equal to the (a0) that ``labels`` builds beside the other variants."""
    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    for name in ("train.json", "train_gt.json"):
        (run / "data" / name).write_text((run_dir / "data" / name).read_text())
    assert oracle.main(["labels", "--run", str(run), "--out", str(tmp_path / "a0"), "--largest-only"]) == 0  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "a0").glob("*.json")) == [
        "oracle_one_largest_box.json", "oracle_one_largest_box.json.meta.json"]  # fmt: skip
    alone = json.loads((tmp_path / "a0" / "oracle_one_largest_box.json").read_text())
    pseudo, split, gt = _load(run_dir)
    check_one_largest_box(alone, pseudo, gt)
    beside = oracle.build_variants(pseudo, split, gt)["one_largest_box"]
    assert alone["annotations"] == beside["annotations"]
    assert "ORACLE" in alone["info"]["oracle"]["note"]
    with pytest.raises(SystemExit):  # (a0) takes no pseudo labels
        oracle.main(["labels", "--run", str(run), "--out", str(tmp_path / "x"), "--largest-only",
                     "--pseudo-labels", str(run_dir / "denoise/pseudo_train.json")])  # fmt: skip
