"""The pseudo-label file and counts (wsod.denoise.labels) and the labelled diagnostic
(wsod.denoise.diagnostics) on hand-made cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wsod.contracts import detections_to_arrays, validate_pseudo_labels
from wsod.denoise import build_chain, denoise_arrays, group_by_image
from wsod.denoise import diagnostics as diag
from wsod.denoise.labels import count_summary, pseudo_boxes, to_coco

SPLIT = {
    "info": {"data_root": ".", "split": "train"},
    "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    "images": [
        {"id": 10, "file_name": "a.jpg", "width": 100, "height": 80, "labels": [1, 2]},
        {"id": 11, "file_name": "b.jpg", "width": 100, "height": 80, "labels": [2]},
    ],
}
DETS = [
    {"image_id": 10, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.9},
    {"image_id": 10, "category_id": 1, "bbox": [5, 5, 10, 10], "score": 0.4},
    {"image_id": 10, "category_id": 2, "bbox": [60, 10, 30, 30], "score": 0.3},
]
CATS = {"cat": 1, "dog": 2}


def _run(chain: list[dict]) -> tuple[dict, dict, dict]:
    a = detections_to_arrays(DETS)
    flat = (a["image_ids"], a["bboxes"], a["scores"], a["labels"], SPLIT["images"])
    raw = denoise_arrays(*flat, build_chain([], CATS))  # label consistency only
    return a, denoise_arrays(*flat, build_chain(chain, CATS)), raw


def test_pseudo_label_file_and_counts():
    _, results, raw = _run([dict(type="top1")])
    pl = validate_pseudo_labels(to_coco(results, SPLIT, info={"split": "train"}))
    assert [a["id"] for a in pl["annotations"]] == [1, 2]
    assert [(a["category_id"], a["bbox"], a["score"]) for a in pl["annotations"]] == [
        (1, [0.0, 0.0, 50.0, 50.0], 0.9),
        (2, [60.0, 10.0, 30.0, 30.0], 0.3),
    ]
    assert [im["id"] for im in pl["images"]] == [10, 11]  # the empty image stays
    s = count_summary(results, SPLIT, raw)
    assert s["boxes"] == 2 and s["images_without_boxes"] == 1
    assert s["pairs_without_detections"] == 1 and s["pairs_lost_by_chain"] == 0
    regions = {10: {**results[10], "ignore": np.array([0, 1])}, 11: results[11]}
    assert [len(d["scores"]) for d in pseudo_boxes(regions).values()] == [1, 0]


def test_group_by_image_is_the_contract_grouping():
    a = detections_to_arrays(DETS + [dict(DETS[0], image_id=3)])
    g = group_by_image(a["image_ids"], a["bboxes"], a["scores"], a["labels"])
    assert list(g) == [3, 10]
    np.testing.assert_allclose(g[10]["scores"], [0.9, 0.4, 0.3])


def _reference(tmp_path: Path, images: list[dict]) -> Path:
    ref = {
        "images": [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in images],
        "categories": SPLIT["categories"],
        "annotations": [
            {"id": 1, "image_id": 10, "category_id": 1, "bbox": [0, 0, 50, 50]},
            {"id": 2, "image_id": 10, "category_id": 2, "bbox": [0, 40, 20, 20]},
            {"id": 3, "image_id": 10, "category_id": 2, "bbox": [60, 10, 30, 30], "difficult": 1},
        ],
    }
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(ref))
    return path


def test_quality_and_ablation_by_hand(tmp_path: Path):
    np.testing.assert_array_equal(diag.labelled_pairs(SPLIT["images"]), [[10, 1], [10, 2], [11, 2]])
    ref = diag.reference_boxes(_reference(tmp_path, SPLIT["images"]), SPLIT["images"], "train")
    assert ref["ignore"].tolist() == [False, False, True]
    arrays, results, raw = _run([dict(type="top1")])
    q = diag.quality(results, raw, SPLIT["images"], ref)
    # raw: cat 0.9 hit, cat 0.4 miss, dog on the difficult box ignored -> P 1/2, R 1/2
    assert q["raw"]["overall"]["precision"] == pytest.approx(1 / 2)
    assert q["raw"]["overall"]["recall"] == pytest.approx(1 / 2)
    # top1 keeps cat 0.9 (hit) and the ignored dog box: P 1/1
    assert q["pseudo"]["overall"]["precision"] == pytest.approx(1.0)
    chains = diag.resolve_ablation({"top1": [dict(type="top1")]}, [dict(type="topk", k=2)])
    assert list(chains) == ["top1", "this run's chain"]
    rows = diag.ablation(chains, arrays, SPLIT["images"], CATS, ref)
    assert [r["overall"]["n_pred"] for r in rows] == [1, 2]
    text = diag.format_ablation_table(rows)
    assert "this run's chain" in text and "100.0" in text
    with pytest.raises(ValueError, match="ablate must be"):
        diag.resolve_ablation(3, [])


def test_reference_of_another_split_is_refused(tmp_path: Path):
    path = _reference(tmp_path, SPLIT["images"][:1])
    with pytest.raises(ValueError, match=r"ref\.json: 1 images of train.* same split"):
        diag.reference_boxes(path, SPLIT["images"], "train")
