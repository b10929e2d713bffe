"""Benchmark of the proposals stage on real VOC 2007 val images (not a test).

It reads the **ground-truth boxes** of the benchmarked val images (VOC Annotations XML) to
measure recall: this is an evaluation tool, never part of the training side.

Reports, per method (selective search fast, EdgeBoxes with the OpenCV edge fallback):
recall at IoU 0.5 and 0.7 of the top 100/500/1000/2000 boxes, boxes per image, seconds per
image (one worker), and for selective search the wall-time speed-up from 1 to 2 workers.

Usage::

    .venv/bin/python benchmarks/proposals_bench.py --num 100
    .venv/bin/python benchmarks/proposals_bench.py --num 30 --methods selective_search --resize 350
    # score a proposal file a pipeline already wrote (every VOC image it holds)
    .venv/bin/python benchmarks/proposals_bench.py --proposals work_dirs/voc07_cpu/proposals/val.pkl

Goals: recall@0.5 >= 0.90 with <= 2000 boxes (selective search); >= 1.8x on 2 workers. The
speed-up needs two idle cores: on a shared machine it reads low.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wsod.proposals.store import load_proposals  # noqa: E402
from wsod.stages.proposals import run  # noqa: E402
from wsod.utils.boxes import box_iou  # noqa: E402

TOPS = (100, 500, 1000, 2000)


def gt_boxes(voc_root: Path, stem: str) -> np.ndarray:
    """Benchmark only: VOC XML boxes (1-based inclusive) -> (N,4) 0-based continuous x1y1x2y2."""
    boxes = []
    for obj in ET.parse(voc_root / "Annotations" / f"{stem}.xml").findall("object"):
        bb = obj.find("bndbox")
        x1, y1, x2, y2 = (float(bb.find(k).text) for k in ("xmin", "ymin", "xmax", "ymax"))
        boxes.append([x1 - 1, y1 - 1, x2, y2])
    return np.array(boxes, dtype=np.float64).reshape(-1, 4)


def make_split(voc_root: Path, stems: list[str], path: Path) -> Path:
    images = []
    for s in stems:
        h, w = cv2.imread(str(voc_root / "JPEGImages" / f"{s}.jpg")).shape[:2]
        images.append(
            {
                "id": int(s),
                "file_name": f"JPEGImages/{s}.jpg",
                "width": w,
                "height": h,
                "labels": [],
            }
        )
    path.write_text(
        json.dumps(
            {
                "images": images,
                "categories": [{"id": 1, "name": "object"}],
                "info": {"data_root": str(voc_root), "split": "val"},
            }
        )
    )
    return path


def recall(props: dict, gts: dict[str, np.ndarray]) -> dict[str, float]:
    out = {}
    for thr in (0.5, 0.7):
        for k in TOPS:
            hit = tot = 0
            for key, g in gts.items():
                b = props[key]["bboxes"][:k]
                tot += len(g)
                if len(b) and len(g):
                    hit += int((box_iou(g, b).max(axis=1) >= thr).sum())
            out[f"R@{thr}/top{k}"] = round(hit / max(tot, 1), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--voc-root", default=str(ROOT.parent / "shared/data/VOCdevkit/VOC2007"))
    ap.add_argument(
        "--num",
        type=int,
        default=None,
        help="number of val images (first N) [100; all with --proposals]",
    )
    ap.add_argument(
        "--proposals",
        metavar="PKL",
        help="score this proposal file (its VOC images) instead of generating",
    )
    ap.add_argument("--methods", nargs="+", default=["selective_search", "edge_boxes"])
    ap.add_argument("--resize", type=int, default=None)
    ap.add_argument("--max-boxes", type=int, default=2000)
    ap.add_argument("--no-speedup", action="store_true", help="skip the 2-worker run")
    args = ap.parse_args(argv)
    voc = Path(args.voc_root)
    if args.proposals:
        props = load_proposals(args.proposals, allow_pickle=True)
        keys = sorted(props)[: args.num]
        gts = {k: gt_boxes(voc, Path(k).stem) for k in keys}
        res = {
            "images": len(keys),
            "objects": int(sum(len(g) for g in gts.values())),
            "boxes_per_image": round(float(np.mean([len(props[k]["bboxes"]) for k in keys])), 1),
            **recall(props, gts),
        }
        print(json.dumps({"proposals": args.proposals, "results": res}, indent=1))
        return 0
    stems = (voc / "ImageSets/Main/val.txt").read_text().split()[: args.num or 100]
    gts = {f"JPEGImages/{s}.jpg": gt_boxes(voc, s) for s in stems}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        split = make_split(voc, stems, Path(tmp) / "val.json")
        for method in args.methods:
            t0 = time.time()
            s1 = run(
                split,
                Path(tmp) / f"{method}.pkl",
                method=method,
                resize=args.resize,
                max_boxes=args.max_boxes,
                workers=1,
            )
            wall1 = time.time() - t0
            res = {
                "images": len(stems),
                "objects": int(sum(len(g) for g in gts.values())),
                "boxes_per_image": s1["boxes_per_image"],
                "s_per_image_1worker": round(wall1 / len(stems), 3),
                **recall(load_proposals(Path(tmp) / f"{method}.pkl"), gts),
            }
            if method == "selective_search" and not args.no_speedup:
                t0 = time.time()
                run(
                    split,
                    Path(tmp) / f"{method}_w2.pkl",
                    method=method,
                    resize=args.resize,
                    max_boxes=args.max_boxes,
                    workers=2,
                )
                wall2 = time.time() - t0
                res["s_per_image_2workers"] = round(wall2 / len(stems), 3)
                res["speedup_1_to_2_workers"] = round(wall1 / wall2, 2)
            results[method] = res
            print(method, json.dumps(res), flush=True)
    print(
        json.dumps(
            {"resize": args.resize, "max_boxes": args.max_boxes, "results": results}, indent=1
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
