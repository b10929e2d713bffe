"""`make all` with pipelines/custom_example.py on real VOC images given as CSVs of tags only.

The README's "your own images" steps on a few dozen real VOC 2007 images: a folder of images
and two CSVs ``file,tag1;tag2`` (the tags read from the VOC annotations' object names; no box
reaches the pipeline), then ``make all`` and ``make predict``. The pipeline under test inherits
pipelines/custom_example.py and only shrinks it (2 training iterations per detector, 100
proposals), as tests/test_voc_pipeline.py does for the VOC pipeline.
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from leak_audit import offences, read_log
from procs import run_bounded
from test_voc_pipeline import MAKE_TIMEOUT_S, NO_WORKERS, REPO, _make_all, audit_log, make_env

NUM_TRAIN, NUM_VAL = 24, 12
TINY = f"""
_base_ = ['{REPO}/pipelines/custom_example.py']
proposals = dict(max_boxes=100, workers=1)
weak = dict(max_iters=2, affinity_start_iter=1, cfg_options={NO_WORKERS!r})
strong = dict(max_iters=2, cfg_options={{**{NO_WORKERS!r},
                                         'model.test_cfg.rcnn.score_thr': 0.0}})
"""


def write_tag_csv(voc_root: Path, split: str, n: int, out: Path) -> list[str]:
    """``out``: the first ``n`` images of a VOC split as 'JPEGImages/<id>.jpg,tag1;tag2'."""
    ids = (voc_root / "ImageSets" / "Main" / f"{split}.txt").read_text().split()[:n]
    rows = ["file,labels"]
    for i in ids:
        root = ET.parse(voc_root / "Annotations" / f"{i}.xml").getroot()
        tags = sorted({o.findtext("name").strip() for o in root.iter("object")})
        rows.append(f"JPEGImages/{i}.jpg,{';'.join(tags)}")
    out.write_text("\n".join(rows) + "\n")
    return ids


@pytest.mark.slow
@pytest.mark.timeout(MAKE_TIMEOUT_S + 900)
def test_custom_example_on_tags_only_real_images(tmp_path, voc_root):
    data = tmp_path / "tags"
    data.mkdir()
    write_tag_csv(voc_root, "train", NUM_TRAIN, data / "train.csv")
    val_ids = write_tag_csv(voc_root, "val", NUM_VAL, data / "val.csv")
    pipeline = tmp_path / "custom_tiny.py"
    pipeline.write_text(
        TINY + f"data = dict(splits=['{data / 'train.csv'}', '{data / 'val.csv'}'])\n"
    )
    run = tmp_path / "run"
    started = time.time()
    out = _make_all(pipeline, run, voc_root)  # DATA_ROOT = the VOC folder: file paths from it
    made = time.time() - started

    assert "--fully-supervised-gt" not in out  # no reference without boxes
    assert "Skipped mAP, AP and COCO AP of every detector on val: " in out
    assert "Skipped CorLoc and pseudo-label precision on train, and no fully supervised" in out
    gt = json.loads((run / "data/val_gt.json").read_text())
    assert gt["info"]["has_boxes"] is False and gt["annotations"] == []

    metrics = json.loads((run / "eval/metrics.json").read_text())
    assert metrics["detectors"] == {} and "train" not in metrics and "ratios" not in metrics
    assert metrics["boxes"]["coverage"] == "none"
    text = json.dumps(metrics)
    for key in ("mAP_11points", "ap_11points", "corloc", "box_precision"):
        assert key not in text, key
    tags = metrics["tags"]
    assert sum(tags["images_per_class"]["val"].values()) >= NUM_VAL  # every image has a tag
    assert set(tags["detectors"]) == {"weak", "strong", "strong_rescored"}
    assert set(tags["agreement"]["weak/strong"]["per_class"]) == set(metrics["classes"])

    report = (run / "report/report.md").read_text()
    # no box metric anywhere but in the lines that say it was skipped
    for line in report.splitlines():
        if re.search(r"\b(mAP|AP|CorLoc)\b", line):
            assert "Skipped " in line, line
    assert "Skipped mAP, AP and COCO AP of every detector on val: " in report
    assert "no fully supervised reference (fsd) can be trained" in report
    # per-class image counts of both splits, as in the data
    assert "| class | train images | val images |" in report
    for cls, n in tags["images_per_class"]["val"].items():
        assert f"| {cls} | {tags['images_per_class']['train'][cls]} | {n} |" in report
    assert "Agreement weak/strong on val" in report
    # both galleries, every image linked exists
    pseudo = sorted((run / "report").glob("pseudo_*.png"))
    gallery = sorted((run / "report").glob("gallery_*.png"))
    assert pseudo and len(gallery) == min(8, NUM_VAL)
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report):
        assert (run / "report" / link).is_file(), link
    assert (run / "report/report.html").stat().st_size > 10_000

    # the README's last step: the detector on new images (here: the val images)
    images = tmp_path / "new"
    images.mkdir()
    for i in val_ids[:3]:
        (images / f"{i}.jpg").symlink_to(voc_root / "JPEGImages" / f"{i}.jpg")
    started = time.time()
    cmd = ["make", "predict", f"PIPELINE={pipeline}", f"RUN={run}", f"IMAGES={images}"]
    done = run_bounded(cmd, cwd=REPO, env=make_env(run), timeout=600)
    predicted = time.time() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not offences(read_log(audit_log(run)))  # make predict opened no ground truth
    new = json.loads((run / "predict/images.json").read_text())
    assert len(new["images"]) == 3
    assert [c["name"] for c in new["categories"]] == metrics["classes"]
    dets = json.loads((run / "predict/detections.json").read_text())
    assert {d["image_id"] for d in dets} <= {im["id"] for im in new["images"]}
    print(f"tags-only make all {made:.0f} s, make predict {predicted:.0f} s")
