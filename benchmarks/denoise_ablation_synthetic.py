"""Synthetic black-box-like detections on real VOC train images, for ``wsod denoise --ablate``.

SYNTHETIC NOISE, NOT A REAL DETECTOR: until the weak detector's output exists, this script writes
an external-format (COCO results) detection file whose noise mimics a WSOD detector's typical
errors around the REAL boxes of the first ``--images`` VOC2007 train images:

* each object is found with probability 0.85 (the first object of a class always), as a box
  jittered around it (IoU mostly 0.5-0.95), score ~ U(0.3, 0.9) decaying with the object's order;
* a discriminative part inside the object (25-60 % of each side) scoring above the full box
  with probability 0.4 (the part domination problem), else below;
* 0-3 near-duplicates per object (jittered, lower scores);
* background boxes of the labelled class (low scores) and wrong-class boxes of unlabelled classes
  (scores up to 0.6).

It writes ``split.json`` (image-level labels from the official per-class lists, flag 1),
``reference.json`` (the XML boxes: diagnosis only) and ``dets.json`` into ``--out-dir``, then
prints the ``wsod denoise ... --ablate`` command (``--run`` runs it). Seeded (``--seed``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wsod import VOC_CLASSES  # noqa: E402


def jitter(rng, b, scale):
    x1, y1, x2, y2 = b
    w, h = x2 - x1, y2 - y1
    d = rng.normal(0, scale, 4) * np.array([w, h, w, h])
    return [x1 + d[0], y1 + d[1], max(x1 + d[0] + 2, x2 + d[2]), max(y1 + d[1] + 2, y2 + d[3])]


def clip(b, w, h):
    x1, y1, x2, y2 = (
        np.clip(b[0], 0, w),
        np.clip(b[1], 0, h),
        np.clip(b[2], 0, w),
        np.clip(b[3], 0, h),
    )
    return [float(x1), float(y1), float(max(x2 - x1, 1.0)), float(max(y2 - y1, 1.0))]  # xywh


def main() -> None:
    ap = argparse.ArgumentParser(description="synthetic noisy detections on real VOC boxes")
    ap.add_argument("--voc", default=str(REPO.parent / "shared/data/VOCdevkit/VOC2007"))
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--out-dir", default=str(REPO / "work_dirs/denoise_ablation_synthetic"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run", action="store_true", help="run wsod denoise --ablate afterwards")
    args = ap.parse_args()
    root, out = Path(args.voc), Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    ids = (root / "ImageSets/Main/train.txt").read_text().split()[: args.images]
    labels = {i: [] for i in ids}
    for k, name in enumerate(VOC_CLASSES):
        for line in (root / f"ImageSets/Main/{name}_train.txt").read_text().splitlines():
            img, flag = line.split()
            if img in labels and flag == "1":
                labels[img].append(k + 1)
    cats = [{"id": k + 1, "name": n} for k, n in enumerate(VOC_CLASSES)]
    images, anns, dets = [], [], []
    for img in ids:
        tree = ET.parse(root / "Annotations" / f"{img}.xml")
        w, h = int(tree.find("size/width").text), int(tree.find("size/height").text)
        iid = int(img)
        images.append(
            {
                "id": iid,
                "file_name": f"JPEGImages/{img}.jpg",
                "width": w,
                "height": h,
                "labels": labels[img],
            }
        )
        objs = []
        for o in tree.findall("object"):
            bb = o.find("bndbox")
            x1, y1, x2, y2 = (float(bb.find(t).text) for t in ("xmin", "ymin", "xmax", "ymax"))
            c = VOC_CLASSES.index(o.find("name").text) + 1
            objs.append((c, [x1 - 1, y1 - 1, x2, y2]))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": iid,
                    "category_id": c,
                    "bbox": [x1 - 1, y1 - 1, x2 - x1 + 1, y2 - y1 + 1],
                    "area": (x2 - x1 + 1) * (y2 - y1 + 1),
                    "iscrowd": 0,
                    "difficult": 0,
                }
            )

        def add(c, b, s, iid=iid, w=w, h=h):
            dets.append(
                {
                    "image_id": iid,
                    "category_id": c,
                    "bbox": clip(b, w, h),
                    "score": round(float(np.clip(s, 1e-4, 1)), 6),
                }
            )

        for c in labels[img]:
            boxes = [b for cc, b in objs if cc == c]
            for k, b in enumerate(boxes):
                if k > 0 and rng.random() > 0.85:
                    continue  # missed object
                s_full = rng.uniform(0.3, 0.9) * 0.85**k
                add(c, jitter(rng, b, 0.06), s_full)
                x1, y1, x2, y2 = b
                fw, fh = rng.uniform(0.25, 0.6, 2)
                px, py = (
                    x1 + rng.uniform(0, 1 - fw) * (x2 - x1),
                    y1 + rng.uniform(0, 1 - fh) * (y2 - y1),
                )
                part = [px, py, px + fw * (x2 - x1), py + fh * (y2 - y1)]
                add(
                    c,
                    part,
                    s_full
                    * (rng.uniform(1.05, 1.4) if rng.random() < 0.4 else rng.uniform(0.4, 0.9)),
                )
                for _ in range(rng.integers(0, 4)):
                    add(c, jitter(rng, b, 0.15), s_full * rng.uniform(0.3, 0.9))
            for _ in range(rng.integers(2, 8)):  # background boxes of the labelled class
                cx, cy = rng.uniform(0, w), rng.uniform(0, h)
                bw, bh = rng.uniform(0.05, 0.5) * w, rng.uniform(0.05, 0.5) * h
                add(c, [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], rng.uniform(0, 0.25))
        for c in rng.choice([k + 1 for k in range(20) if k + 1 not in labels[img]], 3, False):
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            bw, bh = rng.uniform(0.1, 0.6) * w, rng.uniform(0.1, 0.6) * h
            add(int(c), [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], rng.uniform(0, 0.6))
    (out / "split.json").write_text(
        json.dumps(
            {
                "info": {"data_root": str(root), "split": "train"},
                "categories": cats,
                "images": images,
            }
        )
    )
    (out / "reference.json").write_text(
        json.dumps(
            {
                "images": [
                    {k: im[k] for k in ("id", "file_name", "width", "height")} for im in images
                ],
                "categories": cats,
                "annotations": anns,
            }
        )
    )
    (out / "dets.json").write_text(json.dumps(dets))
    print(
        f"SYNTHETIC detections (not a real detector): {len(dets)} boxes on {len(images)} real "
        f"VOC train images, {len(anns)} reference objects -> {out}"
    )
    cmd = [
        sys.executable,
        "-m",
        "wsod",
        "denoise",
        "--detections",
        str(out / "dets.json"),
        "--split",
        str(out / "split.json"),
        "--out",
        str(out / "pseudo.json"),
        "--quality-gt",
        str(out / "reference.json"),
        "--ablate",
    ]
    print(" ".join(cmd))
    if args.run:
        sys.exit(subprocess.call(cmd, cwd=REPO))


if __name__ == "__main__":
    main()
