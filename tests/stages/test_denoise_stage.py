"""The de-noise stage end to end: tiny hand-made split, then real VOC images with synthetic
noisy detections around their real boxes (the test reads the boxes; the stage never does)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from pycocotools.coco import COCO

from wsod import VOC_CLASSES
from wsod.contracts import load_pseudo_labels
from wsod.stages.denoise import run


def write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def tiny_split():
    return {
        "info": {"data_root": ".", "split": "train"},
        "categories": [
            {"id": 1, "name": "cat"},
            {"id": 2, "name": "dog"},
            {"id": 3, "name": "cow"},
        ],
        "images": [
            {"id": 10, "file_name": "a.jpg", "width": 100, "height": 80, "labels": [1, 2]},
            {"id": 11, "file_name": "b.jpg", "width": 100, "height": 80, "labels": [3]},
            {"id": 12, "file_name": "c.jpg", "width": 100, "height": 80, "labels": [1]},
        ],
    }


TINY_DETS = [
    {"image_id": 10, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.9},
    {"image_id": 10, "category_id": 1, "bbox": [5, 5, 10, 10], "score": 0.4},
    {"image_id": 10, "category_id": 3, "bbox": [0, 0, 90, 70], "score": 0.99},  # not labelled
    {"image_id": 10, "category_id": 2, "bbox": [60, 10, 30, 30], "score": 0.2},
    {"image_id": 12, "category_id": 2, "bbox": [1, 1, 20, 20], "score": 0.8},  # not labelled
]


def test_tiny_end_to_end(tmp_path):
    split = write(tmp_path / "train.json", tiny_split())
    dets = write(tmp_path / "dets.json", TINY_DETS)
    out = tmp_path / "pseudo.json"
    s = run(dets, split, out, strategies=[dict(type="top1"), dict(type="weight", mode="one")])
    pl = load_pseudo_labels(out)
    assert Path(f"{out}.meta.json").is_file()
    assert [im["id"] for im in pl["images"]] == [10, 11, 12]  # empty images are kept
    got = sorted(
        (a["image_id"], a["category_id"], tuple(a["bbox"]), a["score"], a["weight"])
        for a in pl["annotations"]
    )
    assert got == [(10, 1, (0, 0, 50, 50), 0.9, 1.0), (10, 2, (60, 10, 30, 30), 0.2, 1.0)]
    assert all(
        a["iscrowd"] == 0 and a["area"] == a["bbox"][2] * a["bbox"][3] for a in pl["annotations"]
    )
    assert s["images_without_boxes"] == 2 and s["boxes"] == 2
    assert s["pairs_without_detections"] == 2  # (11, cow), (12, cat)
    coco = COCO(str(out))  # mmdet's CocoDataset reads it through pycocotools
    assert len(coco.getAnnIds()) == 2


def test_ignore_regions_are_written_as_iscrowd_and_not_counted(tmp_path):
    split = write(tmp_path / "train.json", tiny_split())
    dets = write(tmp_path / "dets.json", TINY_DETS)
    out = tmp_path / "pseudo.json"
    chain = [dict(type="top1"), dict(type="ignore_regions", rel_score=0.4)]
    s = run(dets, split, out, strategies=chain)
    got = sorted(
        (a["iscrowd"], a["category_id"], tuple(a["bbox"]))
        for a in load_pseudo_labels(out)["annotations"]
    )
    # the cat's second box (0.4 >= 0.4 x 0.9, 4 % of the top box's area) is an ignore region
    assert got == [(0, 1, (0, 0, 50, 50)), (0, 2, (60, 10, 30, 30)), (1, 1, (5, 5, 10, 10))]
    assert s["boxes"] == 2 and s["ignore_regions"] == 1 and s["images_without_boxes"] == 2
    coco = COCO(str(out))
    assert len(coco.getAnnIds(iscrowd=False)) == 2


def test_tiny_quality_report_and_ablation(tmp_path, capsys):
    split = write(tmp_path / "train.json", tiny_split())
    dets = write(tmp_path / "dets.json", TINY_DETS)
    ref = tiny_split()
    ref.pop("info")
    for im in ref["images"]:
        im.pop("labels")
    ref["annotations"] = [
        {
            "id": 1,
            "image_id": 10,
            "category_id": 1,
            "bbox": [0, 0, 50, 50],
            "area": 2500,
            "iscrowd": 0,
        },
        {
            "id": 2,
            "image_id": 10,
            "category_id": 2,
            "bbox": [0, 50, 20, 20],
            "area": 400,
            "iscrowd": 0,
        },
        {
            "id": 3,
            "image_id": 12,
            "category_id": 1,
            "bbox": [0, 0, 10, 10],
            "area": 100,
            "iscrowd": 0,
        },
    ]
    ref_path = write(tmp_path / "reference.json", ref)
    out = tmp_path / "pseudo.json"
    chains = {"top1": [dict(type="top1")], "contain": [dict(type="containment", thr=0.85)]}
    s = run(dets, split, out, quality_gt=ref_path, ablate=chains)
    q = json.loads(Path(f"{out}.quality.json").read_text())
    # raw: 3 labelled boxes (cat 0.9 hit, cat part miss, dog miss) of 3 objects
    assert q["raw"]["overall"]["precision"] == pytest.approx(1 / 3)
    assert q["raw"]["overall"]["recall"] == pytest.approx(1 / 3)
    # top1: cat hit, dog miss
    assert q["pseudo"]["overall"]["precision"] == pytest.approx(1 / 2)
    # CorLoc: cat 1 of 2 images (image 12 has no cat box), dog 0 of 1; cow has no reference
    assert q["pseudo"]["overall"]["corloc"] == pytest.approx((0.5 + 0.0) / 2)
    assert q["pseudo"]["n_pairs_without_gt"] == 1
    a = json.loads(Path(f"{out}.ablation.json").read_text())
    names = [r["name"] for r in a["rows"]]
    assert names == ["top1", "contain", "this run's chain"]
    contain = a["rows"][1]["overall"]
    assert contain["n_pred"] == 2 and contain["precision"] == pytest.approx(1 / 2)
    printed = capsys.readouterr().out
    assert "overall" in printed and "boxes/img" in printed
    assert s["quality"]["pseudo"]["recall"] == pytest.approx(1 / 3)


def test_ablate_needs_reference(tmp_path):
    split = write(tmp_path / "train.json", tiny_split())
    dets = write(tmp_path / "dets.json", TINY_DETS)
    with pytest.raises(ValueError, match="--quality-gt"):
        run(dets, split, tmp_path / "o.json", ablate=True)


@pytest.mark.parametrize("info", [{"has_boxes": False}, {"boxed_images": [10]}])
def test_quality_report_refuses_tags_only_reference(tmp_path, info):
    split = write(tmp_path / "train.json", tiny_split())
    dets = write(tmp_path / "dets.json", TINY_DETS)
    ref = tiny_split()
    for im in ref["images"]:
        im.pop("labels")
    ref["info"] = info
    ref["annotations"] = []
    ref_path = write(tmp_path / "tags_gt.json", ref)
    with pytest.raises(ValueError, match="tags_gt.json: reference boxes for .*tags-only"):
        run(dets, split, tmp_path / "o.json", quality_gt=ref_path)
    assert not Path(f"{tmp_path / 'o.json'}.quality.json").exists()
    load_pseudo_labels(tmp_path / "o.json")  # the pseudo labels themselves were written


# --------------------------------------------------------------------------- real VOC
def voc_labels(root: Path, ids: list[str]) -> dict[str, list[int]]:
    """Image-level labels (category id = VOC index + 1) from the official per-class lists."""
    labels: dict[str, list[int]] = {i: [] for i in ids}
    for k, name in enumerate(VOC_CLASSES):
        for line in (root / "ImageSets" / "Main" / f"{name}_train.txt").read_text().splitlines():
            img, flag = line.split()
            if img in labels and flag == "1":
                labels[img].append(k + 1)
    return labels


def voc_boxes(root: Path, img: str):
    """(width, height, [(category id, x1, y1, x2, y2) 0-based]) from the XML (test only)."""
    tree = ET.parse(root / "Annotations" / f"{img}.xml")
    w = int(tree.find("size/width").text)
    h = int(tree.find("size/height").text)
    objs = []
    for o in tree.findall("object"):
        bb = o.find("bndbox")
        x1, y1, x2, y2 = (float(bb.find(t).text) for t in ("xmin", "ymin", "xmax", "ymax"))
        objs.append((VOC_CLASSES.index(o.find("name").text) + 1, x1 - 1, y1 - 1, x2, y2))
    return w, h, objs


def inside(a, b) -> float:
    """Share of box a's area inside box b (x1, y1, x2, y2)."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return iw * ih / ((a[2] - a[0]) * (a[3] - a[1]))


def test_real_voc_quality_numbers(voc_root, tmp_path):
    ids = (voc_root / "ImageSets" / "Main" / "train.txt").read_text().split()[:12]
    labels = voc_labels(voc_root, ids)
    cats = [{"id": k + 1, "name": n} for k, n in enumerate(VOC_CLASSES)]
    images, gt_anns, dets = [], [], []
    n_pairs = n_odd_pairs = n_matched_full = n_gt = n_full_contained = 0
    corloc_hits: dict[int, list[int]] = {}
    for n, img in enumerate(ids):
        w, h, objs = voc_boxes(voc_root, img)
        image_id = int(img)
        images.append(
            {
                "id": image_id,
                "file_name": f"JPEGImages/{img}.jpg",
                "width": w,
                "height": h,
                "labels": labels[img],
            }
        )
        for c, x1, y1, x2, y2 in objs:
            gt_anns.append(
                {
                    "id": len(gt_anns) + 1,
                    "image_id": image_id,
                    "category_id": c,
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "area": (x2 - x1) * (y2 - y1),
                    "iscrowd": 0,
                    "difficult": 0,
                }
            )
        n_gt += len(objs)
        for c in labels[img]:
            boxes = [o[1:] for o in objs if o[0] == c]
            if not boxes:
                continue
            n_pairs += 1
            odd = n % 2 == 1
            n_odd_pairs += odd
            n_matched_full += len(boxes)
            corloc_hits.setdefault(c, []).append(int(odd))
            for k, b in enumerate(boxes):  # by definition: >= 85 % inside a better full box
                n_full_contained += any(inside(b, boxes[j]) >= 0.85 for j in range(k))
            for k, (x1, y1, x2, y2) in enumerate(boxes):  # every object, exact box
                dets.append(
                    {
                        "image_id": image_id,
                        "category_id": c,
                        "bbox": [x1, y1, x2 - x1, y2 - y1],
                        "score": 0.6 - 0.01 * k,
                    }
                )
            x1, y1, x2, y2 = boxes[0]  # a central part of the first object: 30 % x 30 %
            cx, cy, bw, bh = (x1 + x2) / 2, (y1 + y2) / 2, 0.15 * (x2 - x1), 0.15 * (y2 - y1)
            dets.append(
                {
                    "image_id": image_id,
                    "category_id": c,
                    "bbox": [cx - bw, cy - bh, 2 * bw, 2 * bh],
                    "score": 0.3 if odd else 0.8,
                }
            )  # even images: the part wins top-1
        wrong = next(k + 1 for k in range(20) if k + 1 not in labels[img])
        dets.append(
            {
                "image_id": image_id,
                "category_id": wrong,
                "bbox": [0, 0, w / 2, h / 2],
                "score": 0.99,
            }
        )
    assert n_pairs >= 8 and 0 < n_odd_pairs < n_pairs
    split = write(
        tmp_path / "train.json",
        {
            "info": {"data_root": str(voc_root), "split": "train"},
            "categories": cats,
            "images": images,
        },
    )
    ref = write(
        tmp_path / "reference.json",
        {
            "images": [{k: im[k] for k in ("id", "file_name", "width", "height")} for im in images],
            "categories": cats,
            "annotations": gt_anns,
        },
    )
    det_path = write(tmp_path / "dets.json", dets)
    out = tmp_path / "pseudo.json"
    chains = {"contain": [dict(type="containment", thr=0.85)]}
    run(det_path, split, out, quality_gt=ref, ablate=chains)
    q = json.loads(Path(f"{out}.quality.json").read_text())
    raw, ps = q["raw"]["overall"], q["pseudo"]["overall"]
    mean_corloc = np.mean([np.mean(v) for v in corloc_hits.values()])
    # raw: every exact box is a TP, every part box (one per pair) an FP, wrong class dropped
    assert raw["n_pred"] == n_matched_full + n_pairs and raw["tp"] == n_matched_full
    assert raw["recall"] == pytest.approx(n_matched_full / n_gt)
    assert raw["corloc"] == pytest.approx(mean_corloc)
    # default chain (top-1): one box per pair; a hit exactly in the odd images
    assert ps["n_pred"] == n_pairs and ps["tp"] == n_odd_pairs
    assert ps["precision"] == pytest.approx(n_odd_pairs / n_pairs)
    assert ps["recall"] == pytest.approx(n_odd_pairs / n_gt)
    assert ps["boxes_per_image"] == pytest.approx(n_pairs / len(ids))
    assert ps["corloc"] == pytest.approx(mean_corloc)
    # containment drops the part boxes where the full box scores higher (odd images) only
    row = json.loads(Path(f"{out}.ablation.json").read_text())["rows"][0]["overall"]
    # (and full boxes of objects nested in a better-scoring object of the same class)
    assert n_full_contained < n_matched_full
    assert row["n_pred"] == n_matched_full - n_full_contained + (n_pairs - n_odd_pairs)
    assert row["tp"] == n_matched_full - n_full_contained
