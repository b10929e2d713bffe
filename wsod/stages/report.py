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
statement when retraining lowered mAP, which split was evaluated and what the data lacks, and,
in an appendix after the results, the provenance of every input (command, commit, seed, the
whole config from the ``.meta.json`` sidecars). A class no training image is tagged with is
marked in the table (its AP is 0 by construction); a quick look (``quick_look``, ``make all
QUICK=1``) says so above every number. From every sidecar under the run directory
(``run_dir``, default the folder above the metrics file's, i.e. ``RUN`` for
``RUN/eval/metrics.json``; ``report/`` folders and checkpoints skipped): in the appendix, the
run's git commit(s) and each stage's command line (a warning above the results when the
commits differ); in "Cost per
stage", one row per artifact with its wall time, peak RSS, commit and time of writing, a total
and a per-stage summary (see :mod:`wsod.report.cost`). The same rows are returned as ``cost``.
Reading ground truth here is a diagnostic: the gallery draws GT boxes next to predictions.

The tables and text blocks are :mod:`wsod.report.tables`, the gallery :mod:`wsod.report.gallery`,
the figures :mod:`wsod.report.plots`; ``metrics.json`` is read through its contract
(:func:`wsod.contracts.load_metrics`). This module orders the sections and writes the files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsod.contracts import (
    detections_by_image,
    load_metrics,
    load_pseudo_labels,
    ordered_detectors,
    pseudo_label_detections,
)
from wsod.report import cost as run_cost
from wsod.report import tags_only
from wsod.report.document import Document
from wsod.report.tables import (
    comparison_table,
    cost_section,
    fmt,
    mixed_versions,
    per_class_value,
    provenance_rows,
    run_provenance,
    verdict,
)
from wsod.utils.io import write_meta, write_text


def _opening(m: Mapping, title: str | None) -> tuple[Document, tuple[str, bool] | None]:
    """The document with its title, what was evaluated, and the strong-vs-weak verdict."""
    names = ordered_detectors(m["detectors"])
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
    return doc, v


def _results(doc: Document, m: Mapping, out_dir: Path) -> list[Path]:
    """Split, detector table, train-side CorLoc, plots and caveats; returns the figures."""
    from wsod.report.plots import ap_bars, pr_curves

    doc.heading("Detectors side by side (AP@0.5, VOC07 11-point, %)")
    header, rows = comparison_table(m)
    untrained = untrained_classes(m)
    for row in rows:
        if row[0] in untrained:
            row[0] = f"{row[0]} (no train images)"
    doc.table(header, rows)
    if untrained:
        doc.para(
            f"No training image is tagged with {', '.join(untrained)}: no detector here could "
            "learn these classes, so their AP is 0 by construction, not a failure to learn "
            "(tag training images with them to detect them)."
        )
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
            [[n, fmt(t.get("corloc")), t["file"]] for n, t in tdets.items()],
        )
    doc.heading("Plots")
    dets = {n: m["detectors"][n] for n in ordered_detectors(m["detectors"])}
    aps = {n: [per_class_value(d, c, "ap_11points") for c in m["classes"]] for n, d in dets.items()}
    figures = [
        ap_bars(aps, m["classes"], out_dir / "ap_per_class.png"),
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
    return figures


def untrained_classes(m: Mapping) -> list[str]:
    """Classes that no image of the train label split is tagged with (metrics.json's
    ``tags.images_per_class.train``; empty when the run did not record it)."""
    counts = ((m.get("tags") or {}).get("images_per_class") or {}).get("train")
    if not counts:
        return []
    return [c for c in m["classes"] if not counts.get(c)]


def _quick_look(doc: Document, m: Mapping, pipeline: str) -> None:
    """The quick look's callout (``make all QUICK=1``), above every number."""
    doc.callout(
        f"Quick look of {pipeline} (make all QUICK=1): every stage ran on the first images of "
        f"each split ({m.get('num_images')} evaluated here) and every training stopped after a "
        "few steps. It shows that the pipeline runs end to end on your data; its numbers say "
        "nothing about how well it works. After so few steps the strong detector (and the "
        "reference) usually draw no box above their threshold, so their AP columns read 0: "
        f"expected here, not a failure. Next, the full run: `make all PIPELINE={pipeline}` "
        "(the same command without QUICK=1).",
        warn=True,
    )


def _detector_gallery(
    doc: Document, m: Mapping, out_dir: Path, gt: str | os.PathLike, detections: Any, opts: dict
) -> list[Path]:
    """Gallery of the evaluated split: each detector's boxes next to the ground truth."""
    from wsod.report.gallery import gallery
    from wsod.utils.io import named_paths

    det_paths = (
        named_paths(detections)
        if detections is not None
        else {n: Path(d["file"]) for n, d in m["detectors"].items() if d.get("file")}
    )
    doc.heading("Gallery: predictions vs ground truth (dashed)")
    return gallery(doc, out_dir, gt, det_paths, prefix="gallery", caption=m["split"], **opts)


def _pseudo_gallery(
    doc: Document, m: Mapping, out_dir: Path, pseudo_labels: str | os.PathLike, opts: dict
) -> list[Path]:
    """Gallery of the pseudo labels on train images, when the train gt named in metrics.json
    is there."""
    from wsod.report.gallery import gallery

    grouped = detections_by_image(pseudo_label_detections(load_pseudo_labels(pseudo_labels)))
    train_gt = (m.get("train") or {}).get("gt")
    if not (train_gt and Path(train_gt).is_file()):
        doc.para(
            f"Pseudo-label gallery skipped: the train ground truth ({train_gt}) named "
            "in metrics.json is not available."
        )
        return []
    doc.heading("Gallery: pseudo labels vs ground truth (train, diagnostic)")
    return gallery(
        doc, out_dir, train_gt, {}, prefix="pseudo", caption="pseudo labels", pseudo=grouped, **opts
    )


def _tags_galleries(
    doc: Document, m: Mapping, out_dir: Path, detections: Any, pseudo_labels: Any, opts: dict
) -> list[Path]:
    """Galleries of a tags-only run (:func:`wsod.report.tags_only.tags_galleries`): the pseudo
    labels on train images, the detectors' boxes on the evaluated split, without ground truth."""
    from wsod.utils.io import named_paths

    files = (m.get("tags") or {}).get("detectors") or {}
    det_paths = (
        named_paths(detections)
        if detections is not None
        else {n: Path(d["file"]) for n, d in files.items()}
    )
    pseudo = None
    if pseudo_labels is not None:
        pl = load_pseudo_labels(pseudo_labels)
        pseudo = detections_by_image(pseudo_label_detections(pl))
    return tags_only.tags_galleries(doc, m, out_dir, det_paths, pseudo, opts)


def _provenance(doc: Document, m: Mapping, metrics_path: Path, pseudo_labels: Any) -> None:
    """One row per input file (metrics, gt, detections, train side) from its sidecar."""
    doc.heading("Provenance of the inputs", 3)
    files: dict[str, str | None] = {"metrics": str(metrics_path), "gt": m.get("gt")}
    for n in ordered_detectors(m["detectors"]):
        files[f"detections {n}"] = m["detectors"][n].get("file")
    train = m.get("train") or {}
    files["train gt"] = train.get("gt")
    for n, d in (train.get("detectors") or {}).items():
        files[f"train detections {n}"] = d.get("file")
    files["pseudo labels"] = (train.get("pseudo_labels") or {}).get("file") or (
        str(pseudo_labels) if pseudo_labels else None
    )
    prov_rows, configs = provenance_rows(files)
    doc.table(["input", "file", "stage", "command", "commit", "seed"], prov_rows)
    if any(r[5] == "–" for r in prov_rows):
        doc.para("seed –: the stage takes no seed (evaluation, de-noising, ...).")
    if configs:
        doc.code("\n".join(configs))


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
    quick_look: str | None = None,
) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and the figures: results first (the detectors side
    by side, plots, galleries, cost), then an appendix with the commands and the provenance.

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
        quick_look: the pipeline file this run is the quick look of (``make all QUICK=1``):
            a callout above the results says so, what its numbers mean and what to run next.

    Returns:
        ``{"markdown": path, "html": path, "figures": [paths], "gallery": [paths],
        "lowered": bool | None, "cost": dict}``; ``cost`` as
        :func:`wsod.report.cost.collect` (one row per artifact, totals).
    """
    started = time.time()
    metrics_path = Path(metrics)
    m = load_metrics(metrics_path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(run_dir) if run_dir is not None else metrics_path.parent.parent
    cost = run_cost.collect(run_dir, exclude=[out_dir])
    no_boxes = tags_only.is_tags_only(m)
    doc, v = (tags_only.opening(m, title), None) if no_boxes else _opening(m, title)
    if quick_look:
        _quick_look(doc, m, quick_look)
    tags_only.box_notes(doc, m)
    mixed_versions(doc, cost)
    figures = [] if no_boxes else _results(doc, m, out_dir)
    tags_only.tag_tables(doc, m)
    opts = {"n": gallery_images, "seed": seed, "score_thr": score_thr}
    gallery = _galleries(doc, m, out_dir, gt, detections, pseudo_labels, opts)
    cost_section(doc, cost)
    _appendix(doc, m, metrics_path, pseudo_labels, cost)
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
        "quick_look": quick_look,
    }
    inputs = [metrics_path] + [p for p in (gt, pseudo_labels) if p]
    md_path, html_path = _write(doc, out_dir, config, inputs, seed, started)
    return {
        "markdown": md_path,
        "html": html_path,
        "figures": figures,
        "gallery": gallery,
        "lowered": None if v is None else v[1],
        "cost": cost,
    }


def _galleries(
    doc: Document, m: Mapping, out_dir: Path, gt, detections, pseudo_labels, opts: Mapping
) -> list[Path]:
    """The report's galleries (none for ``opts["n"]`` 0): what tags allow for a run without
    boxes, else the detectors' predictions (with ``gt``) and the pseudo boxes against the train
    boxes (with ``pseudo_labels``)."""
    if opts["n"] <= 0:
        return []
    if tags_only.is_tags_only(m):
        return _tags_galleries(doc, m, out_dir, detections, pseudo_labels, opts)
    gallery: list[Path] = []
    if gt is not None:
        gallery += _detector_gallery(doc, m, out_dir, gt, detections, opts)
    if pseudo_labels is not None:
        gallery += _pseudo_gallery(doc, m, out_dir, pseudo_labels, opts)
    return gallery


def _appendix(doc: Document, m: Mapping, metrics_path: Path, pseudo_labels, cost: Mapping) -> None:
    """The appendix after the results: the commands that made the run and the provenance."""
    doc.heading("Appendix: how this run was made")
    run_provenance(doc, cost)
    _provenance(doc, m, metrics_path, pseudo_labels)


def _write(
    doc: Document, out_dir: Path, config: Mapping, inputs: list, seed: int, started: float
) -> tuple[Path, Path]:
    """``report.md`` and ``report.html``, each with its ``.meta.json`` sidecar."""
    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    meta = {"stage": "report", "config": config, "inputs": inputs, "seed": seed}
    write_text(md_path, doc.markdown(out_dir))
    write_meta(md_path, started=started, **meta)
    write_text(html_path, doc.html())
    write_meta(html_path, started=started, **meta)
    return md_path, html_path
