"""ORACLE DIAGNOSTIC: train labels built from the pseudo labels and the TRAIN GROUND TRUTH, to
measure where the detector trained on pseudo labels loses its points against the one trained on
the real boxes (issue 53). A benchmark, never a pipeline stage: it reads the training split's
real boxes (``<run>/data/train_gt.json``) on purpose; no make target of a pipeline reaches it
(``tests/stages/test_leakage.py``), the run-time leakage guard allows this script alone to open
ground truth (``tests/leak_audit.py``), and each file it writes says ORACLE (``info.oracle`` and
its ``.meta.json``).

Four label files, each a COCO instances file (boxes xywh + ``score``) that ``wsod strong
--pseudo-labels FILE`` trains on as it trains on pseudo labels (the same validator; the pseudo
labels' ``images``, ``categories`` and ``info`` with ``oracle`` added). The pseudo labels'
images are those with at least one pseudo box; ignore regions (``iscrowd`` 1) are copied as they
are. A real box is any box of the ground-truth file (a ``difficult`` one too; VOC here has none).

(a) ``oracle_one_real_box.json``, what missing instances cost when every box is right: on every
    image of the split (also those de-noising left without a box: its filters' cost is part of
    what (a) -> (b) measures), one real box per labelled class (the split's image labels): the real
    box of the class that a pseudo box of the class overlaps most (IoU; ties: the first in the
    ground-truth file), else (no pseudo box of the class, or none overlapping a real one) the
    largest real box of the class. A labelled class without a real box (the export lost it: 166
    VOC train images, almost all ``person``) gets no box, as in the real boxes of the reference.
    Score: that pseudo box's, else 1.0.
(a0) ``oracle_one_largest_box.json`` (``labels --largest-only``): (a) without pseudo labels, the
    largest real box of each labelled class on every image, score 1.0; it needs no black box, so
    the missing-instances row can train while the black box does. Where the pseudo box of a class
    overlaps another of its real boxes, (a) takes that one instead (``labels`` prints how many
    images (a0) and (a) differ on, once the pseudo labels exist).
(b) ``oracle_snapped.json``, what loose and misplaced boxes cost: every pseudo box replaced by the
    real box of its class that it overlaps most (ties: the first in the file); one overlapping
    none: the largest real box of its class (the rule of (a)); one whose class has no real box
    in its image stays as it is. Same images, same count (two pseudo boxes may snap to the same
    real box: both stay); scores kept. With one pseudo box per labelled class (``top1``), (b)
    is (a) on the pseudo labels' images but where a labelled class has no real box; (a) adds the
    images and classes de-noising dropped (``labels`` prints on how many images they differ).
(c) ``oracle_correct_only.json``, what wrong boxes cost: only the pseudo boxes with IoU >= 0.5
    with a real box of their class, unchanged; the image's other classes keep their boxes. An
    image left without a box keeps no annotation (its ignore regions go too): mmdet's
    ``filter_empty_gt`` (configs/_base_/datasets/voc07_pseudo.py) leaves it out of training, as
    it leaves out the images de-noise left without a box, instead of training its objects as
    background. The schedule is in iterations, so fewer images are seen more often.

``labels`` writes them and prints, per variant and for the pseudo labels and the real boxes:
images, boxes, correct (IoU >= 0.5 with a real box of the class), box precision and recall of
all train objects (one-to-one, IoU > 0.5: :func:`wsod.evaluation.localization.box_precision_recall`,
as ``wsod evaluate``) and boxes holding 2+ objects (:func:`wsod.denoise.diagnostics.error_breakdown`);
``commands`` prints how to train and evaluate each variant as the Makefile's strong and evaluate
rules do; ``table`` (:mod:`oracle_table`) writes the markdown table of the trained variants.

Usage::

    .venv/bin/python benchmarks/oracle_labels.py labels --run work_dirs/voc07_cpu \\
        --out work_dirs/oracle
    .venv/bin/python benchmarks/oracle_labels.py commands --pipeline pipelines/voc07_cpu.py \\
        --run work_dirs/voc07_cpu --out work_dirs/oracle --seeds 0 1 [--precision bf16]
    .venv/bin/python benchmarks/oracle_labels.py table --gt work_dirs/voc07_cpu/data/val_gt.json \\
        --row "pseudo labels" work_dirs/voc07_cpu/eval/metrics.json:strong \\
              work_dirs/oracle/pseudo_seed1/metrics.json \\
        --row "(c) correct only" work_dirs/oracle/correct_only_seed0/metrics.json ... \\
        --row "real boxes" work_dirs/voc07_cpu/eval/metrics.json:fsd --out oracle_table.md

``commands`` prints, per variant and seed S (the seed the run itself used is not repeated for
the pseudo labels and the real boxes: ``<run>/eval/metrics.json`` holds them as ``strong`` and
``fsd``)::

    .venv/bin/python -m wsod strong --pipeline P --config <P's strong config> \\
        --pseudo-labels <out>/oracle_<variant>.json --work-dir <out>/<variant>_seedS --seed S \\
        --infer <run>/data/val.json:<out>/<variant>_seedS/val_dets.json
    .venv/bin/python -m wsod evaluate --gt <run>/data/val_gt.json \\
        --detections <variant>_seedS=<out>/<variant>_seedS/val_dets.json \\
        --out <out>/<variant>_seedS/metrics.json

(plus ``--init-backbone``, ``--train-proposals`` and ``--precision`` where the pipeline or this
command asks for them), then the ``table`` command over all of them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod import contracts  # noqa: E402
from wsod.denoise.diagnostics import error_breakdown  # noqa: E402
from wsod.evaluation.gt import gt_to_arrays, load_gt  # noqa: E402
from wsod.evaluation.localization import box_precision_recall  # noqa: E402
from wsod.utils.boxes import box_area, box_iou  # noqa: E402
from wsod.utils.io import write_json_artifact, write_text  # noqa: E402

ORACLE = "ORACLE: built from the training ground truth; a diagnostic, never a pipeline input"
LARGEST = "one_largest_box"  # (a0): (a) without pseudo labels
VARIANTS = ("one_real_box", "snapped", "correct_only", LARGEST)  # (a), (b), (c), (a0)
TITLES = {"one_real_box": "(a) one real box", "snapped": "(b) snapped",
          "correct_only": "(c) correct only", LARGEST: "(a0) one largest real box"}  # fmt: skip
CORRECT_IOU = 0.5


def variant_file(name: str) -> str:
    return f"oracle_{name}.json"


def real_boxes_by_pair(gt: dict) -> dict[tuple[int, int], np.ndarray]:
    """(image id, category id) -> (M,4) x1y1x2y2 real boxes, in the file's order."""
    ref = gt_to_arrays(gt)
    out: dict = defaultdict(list)
    for i, c, b in zip(ref["image_ids"], ref["labels"], ref["bboxes"], strict=True):
        out[(int(i), int(c))].append(b)
    return {k: np.array(v, np.float64) for k, v in out.items()}


def most_overlapped(boxes: np.ndarray, reals: np.ndarray) -> tuple[int, float]:
    """(index into ``reals``, IoU) of the real box some of ``boxes`` overlaps most (ties: the
    first real box, then the first pseudo box); no overlap: the largest real box (ties: the
    first) and IoU 0."""
    iou = box_iou(np.asarray(boxes, np.float64).reshape(-1, 4), reals)
    if iou.size and iou.max() > 0:
        best = iou.max(axis=0)  # per real box
        j = int(np.argmax(best))
        return j, float(best[j])
    return int(np.argmax(box_area(reals))), 0.0


def _ann(a: dict, box: np.ndarray | None = None, score: float | None = None) -> dict:
    """A copy of annotation ``a`` with another x1y1x2y2 ``box`` and/or ``score``."""
    out = dict(a)
    if box is not None:
        xywh = contracts.xyxy_to_xywh(box)[0]
        out["bbox"] = [round(float(v), 2) for v in xywh]
        out["area"] = round(float(xywh[2] * xywh[3]), 2)
    if score is not None:
        out["score"] = float(score)
    return out


def _pseudo_boxes(pseudo: dict) -> dict[int, list[dict]]:
    """Image id -> its pseudo boxes (ignore regions left out), for the images that have one."""
    boxes: dict = defaultdict(list)
    for a in pseudo["annotations"]:
        if not contracts.is_ignored(a):
            boxes[a["image_id"]].append(a)
    return boxes


def one_real_box(pseudo: dict, split: dict, reals: dict) -> tuple[list, dict]:
    """Variant (a)'s annotations and counts (module docstring)."""
    boxes = _pseudo_boxes(pseudo)
    labels = {im["id"]: sorted(set(im["labels"])) for im in split["images"]}
    anns, n = [], dict.fromkeys(("overlapped", "largest", "label without real box"), 0)
    strays = sorted(set(boxes) - set(labels))
    if strays:
        raise ValueError(f"image {strays[0]} of the pseudo labels is not in the split")
    for image_id in sorted(labels):
        for c in labels[image_id]:
            own = [a for a in boxes.get(image_id, ()) if a["category_id"] == c]
            if (image_id, c) not in reals:
                n["label without real box"] += 1
                continue
            rb = reals[(image_id, c)]
            xyxy = contracts.xywh_to_xyxy([a["bbox"] for a in own]) if own else np.zeros((0, 4))
            j, iou = most_overlapped(xyxy, rb)
            n["overlapped" if iou > 0 else "largest"] += 1
            score = 1.0
            if own:  # the score of the pseudo box that overlaps the chosen box most
                score = own[int(np.argmax(box_iou(xyxy, rb[j : j + 1])[:, 0]))]["score"]
            base = {"image_id": image_id, "category_id": c, "iscrowd": 0}
            anns.append(_ann(base, rb[j], score))
    return anns, n


def snapped(pseudo: dict, reals: dict) -> tuple[list, dict]:
    """Variant (b)'s annotations and counts (module docstring)."""
    anns, n = [], dict.fromkeys(("overlapped", "largest", "kept: no real box"), 0)
    for a in pseudo["annotations"]:
        rb = reals.get((a["image_id"], a["category_id"]))
        if contracts.is_ignored(a) or rb is None:  # an ignore region, or nothing to snap to
            anns.append(dict(a))
            n["kept: no real box"] += rb is None and not contracts.is_ignored(a)
            continue
        j, iou = most_overlapped(contracts.xywh_to_xyxy(a["bbox"]), rb)
        n["overlapped" if iou > 0 else "largest"] += 1
        anns.append(_ann(a, rb[j]))
    return anns, n


def correct_only(pseudo: dict, reals: dict) -> tuple[list, dict]:
    """Variant (c)'s annotations and counts (module docstring)."""
    kept, n = [], dict.fromkeys(("correct", "dropped"), 0)
    for a in pseudo["annotations"]:
        if contracts.is_ignored(a):  # an ignore region stays (unless its image loses all boxes)
            kept.append(a)
            continue
        rb = reals.get((a["image_id"], a["category_id"]))
        ok = rb is not None and box_iou(contracts.xywh_to_xyxy(a["bbox"]), rb).max() >= CORRECT_IOU
        n["correct" if ok else "dropped"] += 1
        if ok:
            kept.append(a)
    return kept, n


def _finish(pseudo: dict, anns: list, name: str, counts: dict) -> dict:
    """The variant's COCO instances dict: ignore regions of images left without a box dropped,
    ids 1..N, ``info.oracle``; validated as pseudo labels."""
    boxed = {a["image_id"] for a in anns if not contracts.is_ignored(a)}
    anns = [dict(a, id=i) for i, a in enumerate((a for a in anns if a["image_id"] in boxed), 1)]
    info = dict(pseudo.get("info") or {}, oracle={"variant": name, "note": ORACLE, **counts})
    out = {**pseudo, "info": info, "annotations": anns}
    return contracts.validate_pseudo_labels(out, where=variant_file(name))


def build_variants(pseudo: dict, split: dict, gt: dict) -> dict[str, dict]:
    """``{variant: COCO instances dict}`` for :data:`VARIANTS` (module docstring)."""
    reals = real_boxes_by_pair(gt)
    made = {
        "one_real_box": one_real_box(pseudo, split, reals),
        "snapped": snapped(pseudo, reals),
        "correct_only": correct_only(pseudo, reals),
        LARGEST: one_real_box({**pseudo, "annotations": []}, split, reals),
    }
    ignore = [a for a in pseudo["annotations"] if contracts.is_ignored(a)]
    made["one_real_box"] = (made["one_real_box"][0] + ignore, made["one_real_box"][1])
    return {name: _finish(pseudo, anns, name, counts) for name, (anns, counts) in made.items()}


def label_stats(labels: dict, gt: dict) -> dict:
    """Images and boxes (ignore regions left out) of a label file, and their quality against
    every real box of the split: ``correct`` share (IoU >= 0.5), ``precision`` and ``recall``
    (one-to-one, IoU > 0.5), ``two_plus`` share (a box holding 2+ objects of its class)."""
    anns = [a for a in labels["annotations"] if not contracts.is_ignored(a)]
    flat = {
        "image_ids": np.array([a["image_id"] for a in anns], np.int64),
        "labels": np.array([a["category_id"] for a in anns], np.int64),
        "bboxes": contracts.xywh_to_xyxy([a["bbox"] for a in anns]),
        "scores": np.array([a.get("score", 1.0) for a in anns], np.float64),
    }
    ref = gt_to_arrays(gt)
    errors = error_breakdown(flat, ref)
    pr = box_precision_recall(
        flat["bboxes"], flat["scores"], flat["labels"], flat["image_ids"],
        ref["bboxes"], ref["labels"], ref["image_ids"], ref["ignore"],
    )["overall"]  # fmt: skip
    n = max(len(anns), 1)
    return {
        "images": len(set(flat["image_ids"].tolist())),
        "boxes": len(anns),
        "correct": errors["counts"]["correct"] / n,
        "precision": pr["precision"],
        "recall": pr["recall"],
        "two_plus": errors["counts"]["too big, 2+ objects"] / n,
    }


def format_stats(rows: dict[str, dict]) -> str:
    """The label-side table (markdown) of :func:`label_stats` rows."""

    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}"

    lines = [
        "| train labels | images | boxes | correct % | precision % | recall % | 2+ objects % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in rows.items():
        cells = [s["images"], s["boxes"]] + [pct(s[k]) for k in ("correct", "precision")]
        cells += [pct(s["recall"]), pct(s["two_plus"])]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def images_differing(x: dict, y: dict) -> int:
    """Images whose boxes (class and box, ignore regions left out) differ between two label
    files (with one pseudo box per labelled class, as ``top1`` leaves, (a) and (b) differ only
    where a labelled class has no real box: snapping that box is choosing the one real box)."""

    def boxes(labels: dict) -> dict:
        out: dict = defaultdict(list)
        for a in labels["annotations"]:
            if not contracts.is_ignored(a):
                out[a["image_id"]].append((a["category_id"], [round(v, 2) for v in a["bbox"]]))
        return {k: sorted(v) for k, v in out.items()}

    bx, by = boxes(x), boxes(y)
    return sum(bx.get(i) != by.get(i) for i in set(bx) | set(by))


def write_labels(run: Path, out: Path, pseudo_path: Path | None = None) -> dict[str, dict]:
    """Build, write and score the variants of ``run``'s pseudo labels; returns the stats rows
    (also written to ``<out>/oracle_labels.md``)."""
    started = time.time()
    pseudo_path = pseudo_path or run / "denoise" / "pseudo_train.json"
    split_path, gt_path = run / "data" / "train.json", run / "data" / "train_gt.json"
    pseudo = contracts.load_pseudo_labels(pseudo_path)
    split, gt = contracts.load_split(split_path), load_gt(gt_path)
    variants = build_variants(pseudo, split, gt)
    inputs = [pseudo_path, split_path, gt_path]
    for name, labels in variants.items():
        write_json_artifact(
            out / variant_file(name), labels, stage="oracle_labels", inputs=inputs,
            started=started, extra={"supervision": ORACLE, "variant": name, "counts": labels["info"]["oracle"]},
        )  # fmt: skip
    rows = {"pseudo labels": label_stats(pseudo, gt)}
    rows.update({TITLES[k]: label_stats(v, gt) for k, v in reversed(variants.items())})
    rows["real boxes"] = label_stats(gt, gt)
    table = format_stats(rows)
    write_text(out / "oracle_labels.md", f"{ORACLE}\n\n{table}\n")
    for name, labels in variants.items():
        counts = {k: v for k, v in labels["info"]["oracle"].items() if k not in ("variant", "note")}
        print(f"{variant_file(name)}: {counts}")
    print(table)
    n = images_differing(variants["one_real_box"], variants["snapped"])
    print(f"(a) and (b) differ on {n} of {rows['pseudo labels']['images']} images")
    n = images_differing(variants["one_real_box"], variants[LARGEST])
    print(f"(a) and (a0) differ on {n} of {len(split['images'])} images")
    return rows


def no_pseudo_labels(split: dict, split_path: Path) -> dict:
    """An empty pseudo-label file of ``split`` (its images, categories, no box): what (a0) is
    built on."""
    images = [{k: v for k, v in im.items() if k != "labels"} for im in split["images"]]
    info = {k: (split.get("info") or {}).get(k) for k in ("data_root", "split")}
    info.update(description="no pseudo labels: ORACLE (a0)", split_file=str(split_path))
    return {"info": info, "images": images, "categories": split["categories"], "annotations": []}


def write_largest(run: Path, out: Path) -> dict:
    """Write (a0) (module docstring) from ``run``'s split and real boxes, before any pseudo
    label exists; returns its stats row (also in ``<out>/oracle_labels_a0.md``)."""
    started = time.time()
    split_path, gt_path = run / "data" / "train.json", run / "data" / "train_gt.json"
    split, gt = contracts.load_split(split_path), load_gt(gt_path)
    empty = no_pseudo_labels(split, split_path)
    anns, counts = one_real_box(empty, split, real_boxes_by_pair(gt))
    labels = _finish(empty, anns, LARGEST, counts)
    write_json_artifact(
        out / variant_file(LARGEST), labels, stage="oracle_labels", inputs=[split_path, gt_path],
        started=started, extra={"supervision": ORACLE, "variant": LARGEST, "counts": labels["info"]["oracle"]},
    )  # fmt: skip
    rows = {TITLES[LARGEST]: label_stats(labels, gt), "real boxes": label_stats(gt, gt)}
    table = format_stats(rows)
    write_text(out / "oracle_labels_a0.md", f"{ORACLE}\n\n{table}\n")
    print(f"{variant_file(LARGEST)}: {counts}\n{table}")
    return rows[TITLES[LARGEST]]


# ----------------------------------------------------------------------------- command line
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    lab = sub.add_parser("labels", help="write the four ORACLE label files and their table")
    lab.add_argument("--run", required=True, help="the pipeline's run folder (work_dirs/<name>)")
    lab.add_argument("--out", required=True, help="folder for the oracle label files")
    lab.add_argument("--pseudo-labels", help="[<run>/denoise/pseudo_train.json]")
    lab.add_argument(
        "--largest-only", action="store_true",
        help="write (a0) alone: the largest real box per labelled class, no pseudo labels needed",
    )  # fmt: skip
    com = sub.add_parser("commands", help="print how to train and evaluate each variant")
    com.add_argument("--pipeline", required=True, help="the run's pipeline file")
    com.add_argument("--run", required=True, help="the pipeline's run folder (work_dirs/<name>)")
    com.add_argument("--out", required=True, help="the folder `labels` wrote to")
    com.add_argument("--seeds", type=int, nargs="+", default=[0], help="strong seeds [0]")
    com.add_argument("--precision", choices=("auto", "bf16", "fp32"), help="passed to wsod strong")
    tab = sub.add_parser("table", help="the markdown table of the trained variants")
    from benchmarks.oracle_commands import train_commands
    from benchmarks.oracle_table import add_table_arguments, table_main

    add_table_arguments(tab)
    args = ap.parse_args(argv)
    if args.step == "labels":
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        pseudo = Path(args.pseudo_labels) if args.pseudo_labels else None
        if args.largest_only and pseudo:
            ap.error("--largest-only builds (a0) without pseudo labels: drop --pseudo-labels")
        if args.largest_only:
            write_largest(Path(args.run), out)
        else:
            write_labels(Path(args.run), out, pseudo)
    elif args.step == "commands":
        print(f"# {ORACLE}")
        lines = train_commands(args.pipeline, args.run, args.out, args.seeds, args.precision)
        print("\n".join(lines))
    else:
        return table_main(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
