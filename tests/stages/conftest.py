"""Fixtures shared by the report tests: a VOC val/train pair evaluated end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wsod.stages.evaluate import run as evaluate
from wsod.utils.io import write_json_artifact


@pytest.fixture(scope="module")
def evaluated(voc_root: Path, tmp_path_factory) -> dict:
    from wsod.stages.data import run as data_run

    work = tmp_path_factory.mktemp("voc_report")
    data_run(voc_root, work, format="voc", splits=("val", "train"), limit=6)
    gt = json.loads((work / "val_gt.json").read_text())
    strong = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": a["bbox"],
            "score": 0.9 - 1e-3 * i,
        }
        for i, a in enumerate(gt["annotations"])
    ]
    weak = strong[::2]  # half the objects found: recall 1/2 or so per class, lower AP
    # sidecars with a seed and a config, as the upstream stages write them
    write_json_artifact(
        work / "strong.json",
        strong,
        stage="strong",
        seed=7,
        config={"model": "faster_rcnn_test_cfg"},
    )
    write_json_artifact(work / "weak.json", weak, stage="weak", seed=3, config={"model": "wsddn"})
    # pseudo labels = the train GT boxes (precision, recall and CorLoc 100 %)
    tgt = json.loads((work / "train_gt.json").read_text())
    pseudo = work / "pseudo.json"
    pseudo.write_text(
        json.dumps({**tgt, "annotations": [dict(a, score=0.7) for a in tgt["annotations"]]})
    )
    metrics = work / "metrics.json"
    evaluate(
        work / "val_gt.json",
        {"weak": work / "weak.json", "strong": work / "strong.json"},
        metrics,
        train_gt=work / "train_gt.json",
        pseudo_labels=pseudo,
    )
    return {
        "work": work,
        "metrics": metrics,
        "gt": work / "val_gt.json",
        "pseudo": pseudo,
        "n_train": len({a["image_id"] for a in tgt["annotations"]}),
        "n_images": len({a["image_id"] for a in gt["annotations"]}),
    }
