"""Stage ``report``: turn ``metrics.json`` into ``report.md`` and a self-contained ``report.html``.

Inputs:
    - ``metrics``: the ``metrics.json`` of ``wsod evaluate`` (it holds per-class AP and PR curves,
      so the tables and plots need nothing else);
    - optional, for the gallery only: ``gt`` (the evaluated split's ``<split>_gt.json``, whose
      ``info.data_root`` + ``file_name`` locate the images), ``detections`` (``{name: results
      json}``; default: the files named in ``metrics.json``) and ``pseudo_labels`` (drawn against
      the train ground truth named in ``metrics.json`` when that file exists).

Outputs in ``out_dir``: ``report.md`` (links the PNGs), ``report.html`` (PNGs embedded as
base64), ``pr_curves.png``, ``ap_per_class.png``, ``gallery_*.png``; each written atomically,
the two reports with ``.meta.json`` sidecars.

What the report always shows: the detectors side by side per class on the same split (weak,
pseudo labels (their train-side quality), strong, fsd), the strong/weak ratio with a plain
statement when retraining lowered mAP, which split was evaluated and what the data lacks, and the
provenance of every input (command, commit, seed, config from the ``.meta.json`` sidecars).
From every sidecar under the run directory (``run_dir``, default the folder above the metrics
file's, i.e. ``RUN`` for ``RUN/eval/metrics.json``; ``report/`` folders and checkpoints
skipped): near the top, the run's git commit(s) and each stage's command line; in "Cost per
stage", one row per artifact with its wall time, peak RSS, commit and time of writing, a total
and a per-stage summary (see :mod:`wsod.report.cost`). The same rows are returned as ``cost``.
Reading ground truth here is a diagnostic: the gallery draws GT boxes next to predictions.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod.report import cost as run_cost
from wsod.report.document import Document
from wsod.utils.io import read_json, write_meta, write_text

DETECTOR_ORDER = ("weak", "strong", "fsd")


def _fmt(x: Any, pct: bool = True) -> str:
    if x is None:
        return "–"
    return f"{x * 100:.1f}" if pct else f"{x:.2f}"


def _sidecar(path: str | os.PathLike | None) -> dict | None:
    if not path:
        return None
    meta = Path(f"{path}.meta.json")
    if not meta.is_file():
        return None
    try:
        return json.loads(meta.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _provenance_rows(files: Mapping[str, str | None]) -> tuple[list[list[str]], list[str]]:
    rows, configs = [], []
    for role, path in files.items():
        if not path:
            continue
        meta = _sidecar(path)
        if meta is None:
            rows.append([role, str(path), "(no .meta.json sidecar)", "", "", ""])
            continue
        cmd = meta.get("command") or []
        cmd = " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd)
        rows.append(
            [
                role,
                str(path),
                meta.get("stage") or "",
                cmd,
                str(meta.get("git_commit") or "unknown"),
                str(meta.get("seed")),
            ]
        )
        cfg = meta.get("config")
        if cfg:
            text = json.dumps(cfg, sort_keys=True, default=str)
            configs.append(f"{role}: {text[:600]}{' ...' if len(text) > 600 else ''}")
    return rows, configs


def _run_provenance(doc: Document, cost: Mapping) -> None:
    """The run's commits and the command line of each stage, from its sidecars."""
    doc.heading("Run provenance")
    rows = cost["rows"]
    if not rows:
        doc.para(f"No .meta.json sidecars found under the run directory {cost['run_dir']}.")
        return
    found = run_cost.commits(cost)
    listed = "; ".join(f"{c} ({', '.join(stages)})" for c, stages in found)
    doc.para(
        f"Run directory {cost['run_dir']} ({len(rows)} artifacts with a .meta.json sidecar). "
        f"Git commit{'s' if len(found) > 1 else ''}: {listed}."
    )
    if len(found) > 1:
        doc.callout(
            f"The artifacts of this run were written by {len(found)} different code versions.",
            warn=True,
        )
    doc.code("\n".join(f"{stage}: {cmd}" for stage, cmd in run_cost.commands(cost)))


def _cost_section(doc: Document, cost: Mapping) -> None:
    doc.heading("Cost per stage")
    if not cost["rows"]:
        doc.para(f"No .meta.json sidecars found under the run directory {cost['run_dir']}.")
        return
    doc.para(
        "One row per artifact, from its .meta.json sidecar (wall time from the stage's start to "
        "the artifact's writing; peak RSS: the larger of the process and its largest finished "
        "child; n/a: not recorded). start -> end: minutes from the earliest start of any "
        "artifact here, so a run made in one go reads as its timeline (stages that overlap ran "
        "at once) and the last end is its wall time; a run resumed later shows the gap."
    )
    doc.table(*run_cost.cost_table(cost))
    doc.para(
        "Artifacts written by one process share its clock (a proposal .pkl and its .npz twin, "
        "the files of one wsod data run), so the sum above counts that time more than once. Per "
        "stage, with overlapping [written_at - wall time, written_at] intervals counted once:"
    )
    doc.table(*run_cost.stage_table(cost))
    if cost["unreadable"]:
        doc.para(f"Unreadable sidecars skipped: {', '.join(cost['unreadable'])}.")


def _ordered(names: Sequence[str]) -> list[str]:
    first = [n for n in DETECTOR_ORDER if n in names]
    return first + [n for n in names if n not in first]


def _per_class_value(entry: Mapping | None, cls: str, *keys: str) -> Any:
    """``entry["per_class"][cls][k0][k1]...`` or None."""
    if not entry:
        return None
    v = (entry.get("per_class") or {}).get(cls)
    for k in keys:
        if not isinstance(v, Mapping):
            return None
        v = v.get(k)
    return v


def comparison_table(metrics: Mapping) -> tuple[list[str], list[list[str]]]:
    """Per-class table, detectors side by side (VOC07 11-point AP@0.5, %).

    Columns: class, #GT, weak, pseudo labels (train-side precision / recall / CorLoc when
    present), strong, fsd (and any other detector), strong/weak. The last rows give the means
    (11-point, area) and COCO AP.
    """
    dets = metrics["detectors"]
    names = _ordered(list(dets))
    train = metrics.get("train") or {}
    pl = train.get("pseudo_labels")
    header = ["class", "#GT"]
    cols: list[tuple[str, str]] = []
    for n in names:
        if n == "strong" and pl:
            cols.append(("pseudo", "pseudo labels P/R/CorLoc (train)"))
        cols.append(("det", n))
    if pl and "strong" not in names:
        cols.append(("pseudo", "pseudo labels P/R/CorLoc (train)"))
    header += [f"{c} AP" if kind == "det" else c for kind, c in cols]
    has_ratio = "weak" in dets and "strong" in dets
    if has_ratio:
        header.append("strong/weak")
    ref = dets[names[0]]
    rows = []
    for cls in metrics["classes"]:
        row = [cls, str(_per_class_value(ref, cls, "num_gt"))]
        for kind, c in cols:
            if kind == "det":
                row.append(_fmt(_per_class_value(dets[c], cls, "ap_11points")))
            else:
                p = _per_class_value(pl, cls, "box_precision")
                r = _per_class_value(pl, cls, "box_recall")
                cl = _per_class_value(pl, cls, "corloc")
                row.append(f"{_fmt(p)} / {_fmt(r)} / {_fmt(cl)}")
        if has_ratio:
            s = _per_class_value(dets["strong"], cls, "ap_11points")
            w = _per_class_value(dets["weak"], cls, "ap_11points")
            row.append(f"{s / w:.2f}" if s is not None and w else "–")
        rows.append(row)
    for label, key in (
        ("mAP (11-point)", "mAP_11points"),
        ("mAP (area)", "mAP_area"),
        ("COCO AP 0.5:0.95", None),
    ):
        row = [f"**{label}**", ""]
        for kind, c in cols:
            if kind == "det":
                v = dets[c].get(key) if key else (dets[c].get("coco") or {}).get("AP")
                row.append(_fmt(v))
            elif key == "mAP_11points":
                row.append(
                    f"{_fmt(pl.get('box_precision'))} / {_fmt(pl.get('box_recall'))} / "
                    f"{_fmt(pl.get('corloc'))}"
                )
            elif key == "mAP_area":
                row.append(f"AP {_fmt(pl.get('mAP_11points'))} (11-pt, train)")
            else:
                row.append("")
        if has_ratio:
            ratio = (metrics.get("ratios") or {}).get("strong/weak") or {}
            rk = key or "coco_AP"
            row.append("–" if ratio.get(rk) is None else f"{ratio[rk]:.2f}")
        rows.append(row)
    return header, rows


def verdict(metrics: Mapping) -> tuple[str, bool] | None:
    """A plain sentence on strong vs weak mAP, and whether retraining lowered it."""
    dets = metrics["detectors"]
    if "weak" not in dets or "strong" not in dets:
        return None
    w, s = dets["weak"]["mAP_11points"], dets["strong"]["mAP_11points"]
    if w is None or s is None:
        return None
    ratio = f" (ratio strong/weak {s / w:.2f})" if w else ""
    if s < w:
        return (
            f"Retraining LOWERED mAP: strong {s * 100:.1f} < weak {w * 100:.1f} "
            f"(VOC07 11-point AP@0.5 on {metrics['split']}){ratio}.",
            True,
        )
    return (
        f"Retraining raised mAP: strong {s * 100:.1f} vs weak {w * 100:.1f} "
        f"(VOC07 11-point AP@0.5 on {metrics['split']}){ratio}.",
        False,
    )


def _image_reader(gt: Mapping, gt_path: str | os.PathLike | None):
    import cv2

    from wsod.evaluation.gt import image_root

    root = image_root(gt, gt_path)
    by_id = {int(im["id"]): im for im in gt["images"]}

    def read(img_id: int) -> np.ndarray | None:
        im = by_id[img_id]
        path = Path(im["file_name"]) if root is None else root / im["file_name"]
        arr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        return None if arr is None else arr[:, :, ::-1].copy()

    return read


def _layer(
    name: str,
    grouped: Mapping,
    img_id: int,
    score_thr: float | None = None,
    top: int = 20,
    dashed: bool = False,
) -> dict:
    g = grouped.get(img_id)
    if g is None:
        return {"name": name, "bboxes": np.zeros((0, 4)), "labels": np.zeros(0, int)}
    keep = np.arange(len(g["labels"]))
    if "scores" in g:
        keep = keep[np.argsort(-g["scores"], kind="stable")]
        if score_thr is not None:
            keep = keep[g["scores"][keep] >= score_thr]
        keep = keep[:top]
    layer = {
        "name": name,
        "bboxes": g["bboxes"][keep],
        "labels": g["labels"][keep],
        "dashed": dashed,
    }
    if "scores" in g:
        layer["scores"] = g["scores"][keep]
    return layer


def _gallery(
    doc: Document,
    out_dir: Path,
    gt_path: str | os.PathLike,
    det_paths: Mapping,
    n: int,
    seed: int,
    score_thr: float,
    prefix: str,
    caption: str,
    pseudo: Mapping | None = None,
) -> list[Path]:
    from wsod.contracts import detections_by_image, load_detections
    from wsod.evaluation.gt import class_names, gt_by_image, load_gt
    from wsod.report.plots import draw_panels

    gt = load_gt(gt_path)
    gts = gt_by_image(gt)
    names = class_names(gt)
    dets = {k: detections_by_image(load_detections(p, gt)) for k, p in det_paths.items()}
    candidates = sorted(i for i, g in gts.items() if len(g["labels"]))
    if pseudo is not None:
        candidates = [i for i in candidates if i in pseudo]
    if not candidates or n <= 0:
        return []
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(candidates, size=min(n, len(candidates)), replace=False).tolist())
    read = _image_reader(gt, gt_path)
    files = []
    for k, img_id in enumerate(chosen):
        image = read(img_id)
        if image is None:
            continue
        gt_layer = _layer("gt", gts, img_id, dashed=True)
        panels = [("ground truth", [gt_layer])]
        if pseudo is not None:
            panels.append(
                (
                    "pseudo labels vs GT (dashed)",
                    [gt_layer, _layer("pseudo labels", pseudo, img_id)],
                )
            )
        for name, grouped in dets.items():
            panels.append(
                (
                    f"{name} (score >= {score_thr})",
                    [gt_layer, _layer(name, grouped, img_id, score_thr)],
                )
            )
        fname = next(im["file_name"] for im in gt["images"] if int(im["id"]) == img_id)
        path = draw_panels(
            image,
            panels,
            out_dir / f"{prefix}_{k:02d}.png",
            names,
            title=f"image {img_id}: {fname}",
        )
        doc.image(path, f"{caption}: image {img_id} ({fname})")
        files.append(path)
    return files


def run(
    metrics: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    gt: str | os.PathLike | None = None,
    detections: Mapping[str, Any] | Sequence[str] | None = None,
    pseudo_labels: str | os.PathLike | None = None,
    gallery_images: int = 8,
    title: str | None = None,
    seed: int = 0,
    score_thr: float = 0.3,
    run_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and the figures.

    Args:
        metrics: ``metrics.json`` of ``wsod evaluate``.
        out_dir: output folder (created).
        gt: the evaluated split's gt file; enables the gallery of detector predictions.
        detections: ``{name: results json}`` for the gallery (default: files in ``metrics``).
        pseudo_labels: pseudo-label json; with the train gt named in ``metrics`` it adds a
            gallery of pseudo boxes vs GT on train images.
        gallery_images: images per gallery (0 disables the galleries).
        title: report title.
        seed: seed of the gallery's image choice.
        score_thr: minimum score of a drawn detection.
        run_dir: the run whose ``.meta.json`` sidecars give the provenance and cost sections
            (default: the folder above the metrics file's, ``RUN`` for
            ``RUN/eval/metrics.json``).

    Returns:
        ``{"markdown": path, "html": path, "figures": [paths], "gallery": [paths],
        "lowered": bool | None, "cost": dict}``; ``cost`` as
        :func:`wsod.report.cost.collect` (one row per artifact, totals).
    """
    from wsod.report.plots import ap_bars, pr_curves
    from wsod.stages.evaluate import named_paths

    started = time.time()
    metrics_path = Path(metrics)
    m = read_json(metrics_path)
    for key in ("detectors", "classes", "split"):
        if key not in m:
            raise ValueError(f"{metrics_path}: missing '{key}'; regenerate it with `wsod evaluate`")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(run_dir) if run_dir is not None else metrics_path.parent.parent
    cost = run_cost.collect(run_dir, exclude=[out_dir])
    names = _ordered(list(m["detectors"]))
    dets = {n: m["detectors"][n] for n in names}
    doc = Document(title or f"WSOD report — {', '.join(names)} on {m['split']}")

    doc.para(
        f"Evaluated split: {m['split']} ({m.get('num_images')} images, "
        f"{m.get('num_gt_boxes')} ground-truth boxes; gt file {m.get('gt')}). "
        f"VOC AP at IoU {m.get('iou_thr', 0.5)}: 11-point (VOC07) and area (VOC10+); "
        "COCO AP 0.5:0.95 from pycocotools."
    )
    v = verdict(m)
    if v is not None:
        doc.callout(v[0], warn=v[1])
    _run_provenance(doc, cost)

    doc.heading("Detectors side by side (AP@0.5, VOC07 11-point, %)")
    header, rows = comparison_table(m)
    doc.table(header, rows)
    if (m.get("train") or {}).get("pseudo_labels"):
        doc.para(
            "Pseudo labels are scored on the train split against its ground truth "
            "(precision / recall of the boxes and CorLoc at IoU > 0.5, from "
            "wsod.evaluation.localization): a diagnostic of their quality, not a detector "
            "result on the evaluated split."
        )
    tdets = (m.get("train") or {}).get("detectors") or {}
    if tdets:
        doc.heading("Train-side CorLoc", 3)
        doc.table(
            ["detector", "CorLoc (%, mean over classes)", "file"],
            [[n, _fmt(t.get("corloc")), t["file"]] for n, t in tdets.items()],
        )

    doc.heading("Plots")
    figures = [
        ap_bars(
            {n: [_per_class_value(dets[n], c, "ap_11points") for c in m["classes"]] for n in names},
            m["classes"],
            out_dir / "ap_per_class.png",
        ),
        pr_curves(dets, m["classes"], out_dir / "pr_curves.png"),
    ]
    doc.image(figures[0], "Per-class AP@0.5 (VOC07 11-point) of each detector")
    doc.image(
        figures[1],
        "Precision/recall per class (precision envelope at 101 recall levels; "
        "legend: 11-point AP %)",
    )

    doc.heading("Data and caveats")
    doc.bullets(
        [f"Split evaluated: {m['split']}."] + list(m.get("caveats", [])) + [m.get("gt_note", "")]
    )

    _cost_section(doc, cost)

    gallery: list[Path] = []
    if gt is not None and gallery_images > 0:
        det_paths = (
            named_paths(detections)
            if detections is not None
            else {n: Path(d["file"]) for n, d in dets.items() if d.get("file")}
        )
        doc.heading("Gallery: predictions vs ground truth (dashed)")
        gallery += _gallery(
            doc, out_dir, gt, det_paths, gallery_images, seed, score_thr, "gallery", f"{m['split']}"
        )
    train_gt = (m.get("train") or {}).get("gt")
    if pseudo_labels is not None and gallery_images > 0:
        from wsod.contracts import detections_by_image, load_pseudo_labels

        pl = load_pseudo_labels(pseudo_labels)
        grouped = detections_by_image(
            [
                {
                    "image_id": a["image_id"],
                    "category_id": a["category_id"],
                    "bbox": a["bbox"],
                    "score": a.get("score", 1.0),
                }
                for a in pl["annotations"]
            ]
        )
        if train_gt and Path(train_gt).is_file():
            doc.heading("Gallery: pseudo labels vs ground truth (train, diagnostic)")
            gallery += _gallery(
                doc,
                out_dir,
                train_gt,
                {},
                gallery_images,
                seed,
                score_thr,
                "pseudo",
                "pseudo labels",
                pseudo=grouped,
            )
        else:
            doc.para(
                f"Pseudo-label gallery skipped: the train ground truth ({train_gt}) named "
                "in metrics.json is not available."
            )

    doc.heading("Provenance")
    files: dict[str, str | None] = {"metrics": str(metrics_path), "gt": m.get("gt")}
    for n, d in dets.items():
        files[f"detections {n}"] = d.get("file")
    train = m.get("train") or {}
    files["train gt"] = train.get("gt")
    for n, d in (train.get("detectors") or {}).items():
        files[f"train detections {n}"] = d.get("file")
    files["pseudo labels"] = (train.get("pseudo_labels") or {}).get("file") or (
        str(pseudo_labels) if pseudo_labels else None
    )
    prov_rows, configs = _provenance_rows(files)
    doc.table(["input", "file", "stage", "command", "commit", "seed"], prov_rows)
    if configs:
        doc.code("\n".join(configs))

    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    inputs = [metrics_path] + [p for p in (gt, pseudo_labels) if p]
    config = {
        "metrics": metrics_path,
        "gt": gt,
        "detections": detections,
        "pseudo_labels": pseudo_labels,
        "gallery_images": gallery_images,
        "title": title,
        "seed": seed,
        "score_thr": score_thr,
        "run_dir": run_dir,
    }
    write_text(md_path, doc.markdown(out_dir))
    write_meta(md_path, stage="report", config=config, inputs=inputs, seed=seed, started=started)
    write_text(html_path, doc.html())
    write_meta(html_path, stage="report", config=config, inputs=inputs, seed=seed, started=started)
    return {
        "markdown": md_path,
        "html": html_path,
        "figures": figures,
        "gallery": gallery,
        "lowered": None if v is None else v[1],
        "cost": cost,
    }
