"""Tags-only data and a box-annotated subset through data -> evaluate -> report, on real VOC
images given as a CSV of tags (the tags read from the VOC annotations' object names)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wsod import VOC_CLASSES
from wsod.evaluation.tags_only import agreement, box_coverage, firing, restrict, tag_hits

N = 6


def _tag_csv(voc_root: Path, out: Path) -> list[str]:
    ids = (voc_root / "ImageSets/Main/val.txt").read_text().split()[:N]
    rows = []
    for i in ids:
        root = ET.parse(voc_root / "Annotations" / f"{i}.xml").getroot()
        rows.append(
            f"JPEGImages/{i}.jpg,{';'.join(sorted({o.findtext('name') for o in root.iter('object')}))}"
        )
    out.write_text("\n".join(rows) + "\n")
    return ids


@pytest.fixture(scope="module")
def tagged(voc_root: Path, tmp_path_factory) -> dict:
    """``wsod data --format csv`` on 6 real val images: once tags only, once with the VOC XML
    boxes of the first 3 images (``--boxes`` folder)."""
    from wsod.stages.data import run as data_run

    tmp = tmp_path_factory.mktemp("tags")
    ids = _tag_csv(voc_root, tmp / "val.csv")
    boxes = tmp / "xml"
    boxes.mkdir()
    for i in ids[:3]:
        (boxes / f"{i}.xml").symlink_to(voc_root / "Annotations" / f"{i}.xml")
    opts = {"format": "csv", "splits": [str(tmp / "val.csv")], "classes": VOC_CLASSES}
    data_run(voc_root, tmp / "none", **opts)
    data_run(voc_root, tmp / "some", boxes=boxes, **opts)
    return {"dir": tmp, "ids": ids}


def _read(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _whole_image_dets(split: dict, score: float = 0.9) -> list[dict]:
    """One whole-image box per tag of each image: fires on exactly the tagged classes."""
    return [
        {
            "image_id": im["id"],
            "category_id": c,
            "bbox": [0, 0, im["width"], im["height"]],
            "score": score,
        }
        for im in split["images"]
        for c in im["labels"]
    ]


def test_data_records_which_images_have_boxes(tagged):
    none = _read(tagged["dir"] / "none/val_gt.json")
    assert none["info"]["has_boxes"] is False and not none["annotations"]
    assert box_coverage(none)["coverage"] == "none"
    some = _read(tagged["dir"] / "some/val_gt.json")
    boxed = some["info"]["boxed_images"]
    assert len(boxed) == 3 and {a["image_id"] for a in some["annotations"]} == set(boxed)
    cover = box_coverage(some)
    assert cover["coverage"] == "subset" and cover["num_boxed_images"] == 3
    assert cover["num_images"] == N
    assert box_coverage(restrict(some, boxed))["coverage"] == "all"  # only boxed images left
    full = dict(some, info={k: v for k, v in some["info"].items() if k != "boxed_images"})
    assert box_coverage(full)["coverage"] == "all"


def test_evaluate_scores_the_boxed_subset_only(tagged, tmp_path):
    from wsod.stages.evaluate import run

    d = tagged["dir"] / "some"
    gt, split = _read(d / "val_gt.json"), _read(d / "val.json")
    perfect = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": a["bbox"],
            "score": 0.9 - 1e-3 * k,
        }
        for k, a in enumerate(gt["annotations"])
    ]
    # a confident false positive of every class on an image without boxes: outside the subset,
    # so it must not count (on the whole split it would lower every AP)
    unboxed = next(im["id"] for im in split["images"] if im["id"] not in gt["info"]["boxed_images"])
    fps = [
        {"image_id": unboxed, "category_id": c, "bbox": [0, 0, 5, 5], "score": 0.99}
        for c in range(1, len(split["categories"]) + 1)
    ]
    dets = tmp_path / "dets.json"
    dets.write_text(json.dumps(perfect + fps))
    m = run(
        d / "val_gt.json",
        {"weak": dets},
        tmp_path / "metrics.json",
        label_splits={"val": d / "val.json"},
    )
    assert m["num_images"] == 3 and m["boxes"]["coverage"] == "subset"
    assert "for 3 of the 6 val images" in m["caveats"][0]
    assert m["detectors"]["weak"]["mAP_11points"] == pytest.approx(1.0)
    assert m["skipped"] == []
    from wsod.stages.report import run as report_run

    out = report_run(tmp_path / "metrics.json", tmp_path / "report", run_dir=tmp_path)
    md = Path(out["markdown"]).read_text()
    assert "boxes were given (wsod data --boxes) for 3 of the 6 val images" in md


def test_evaluate_and_report_on_tags_only_data(tagged, tmp_path):
    from wsod.stages.evaluate import run
    from wsod.stages.report import run as report_run

    d = tagged["dir"] / "none"
    split = _read(d / "val.json")
    weak = tmp_path / "weak.json"
    weak.write_text(json.dumps(_whole_image_dets(split)))
    strong = tmp_path / "strong.json"
    strong.write_text(json.dumps(_whole_image_dets(split, 0.5)))
    m = run(
        d / "val_gt.json",
        {"weak": weak, "strong": strong},
        tmp_path / "eval/metrics.json",
        label_splits={"val": d / "val.json"},
    )
    assert m["detectors"] == {} and "ratios" not in m
    assert len(m["skipped"]) == 1 and "has no boxes" in m["skipped"][0]
    counts = m["tags"]["images_per_class"]["val"]
    assert sum(counts.values()) == sum(len(im["labels"]) for im in split["images"])
    hits = m["tags"]["detectors"]["weak"]
    assert hits["fires_tagged"] == 1.0 and hits["fires_untagged"] == 0.0
    agree = m["tags"]["agreement"]["weak/strong"]
    assert agree["both_of_either"] == 1.0 and agree["mean_iou"] == pytest.approx(1.0)

    out = report_run(
        tmp_path / "eval/metrics.json",
        tmp_path / "report",
        detections={"weak": weak, "strong": strong},
        gallery_images=3,
    )
    md = Path(out["markdown"]).read_text()
    for line in md.splitlines():
        if re.search(r"\b(mAP|AP|CorLoc)\b", line):
            assert "Skipped " in line, line
    assert "Tagged images per class" in md and "Agreement weak/strong on val" in md
    assert len(out["gallery"]) == 3 and all(Path(p).is_file() for p in out["gallery"])


def test_tag_hits_and_agreement_count_by_hand():
    split = {
        "images": [{"id": 1, "labels": [1]}, {"id": 2, "labels": [2]}, {"id": 3, "labels": []}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    }
    box = [0.0, 0.0, 10.0, 10.0]
    a = [
        {"image_id": 1, "category_id": 1, "bbox": box, "score": 0.9},
        {"image_id": 3, "category_id": 1, "bbox": box, "score": 0.8},
        {"image_id": 2, "category_id": 2, "bbox": box, "score": 0.1},  # below the threshold
    ]
    b = [{"image_id": 1, "category_id": 1, "bbox": [0.0, 0.0, 10.0, 5.0], "score": 0.7}]
    hits = tag_hits(split, firing(a, 0.3))["per_class"]
    assert hits["cat"] == {"tagged": 1, "untagged": 2, "fires_tagged": 1.0, "fires_untagged": 0.5}
    assert hits["dog"]["fires_tagged"] == 0.0
    ag = agreement(split, firing(a, 0.3), firing(b, 0.3))
    assert ag["per_class"]["cat"] == {
        "either": 2,
        "both": 1,
        "both_of_either": 0.5,
        "mean_iou": 0.5,
    }
    assert ag["per_class"]["dog"]["both_of_either"] is None


def test_fully_supervised_reference_refuses_tags_only_data(tagged, tmp_path):
    from wsod.stages.strong import StrongStageError, run

    for kind in ("none", "some"):
        with pytest.raises(StrongStageError, match="FSD=0"):
            run(
                "configs/faster_rcnn/faster-rcnn_mobilenetv2_fpn_cpu-2e_voc07-pseudo_voc07-val.py",
                None,
                tmp_path / kind,
                fully_supervised_gt=tagged["dir"] / kind / "val_gt.json",
            )
