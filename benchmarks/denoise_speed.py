"""Speed of the de-noise stage on a VOC07-trainval-sized synthetic detection set.

What it measures (seeded, nothing downloaded):
  * a synthetic black-box output: ``--images`` images (default 5,011 = VOC07 trainval), 20
    classes, ``--per-image`` boxes each (default 300, i.e. ~1.5 M boxes, 15 per class), random
    boxes and scores; each image has 1-3 labelled classes (VOC averages 1.5);
  * ``chain``: the default chain and every strategy (after label consistency) over all images,
    flat arrays in memory (no json), as the stage runs it (``denoise_arrays``: one vectorised
    batch for the whole split, results split back per image);
  * ``json``: writing the COCO results list, reading + validating it with
    ``wsod.contracts.load_detections`` and converting to arrays (``--no-json`` skips this).

Usage: ``python benchmarks/denoise_speed.py [--images 5011] [--per-image 300] [--no-json]``.
Times are wall-clock seconds of one run each (``time.perf_counter``), single process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from wsod.contracts import detections_to_arrays, load_detections
from wsod.denoise import DEFAULT_STRATEGIES, build_chain, denoise_arrays, denoise_images

ONE_STRATEGY = {
    "top1": [dict(type="top1")],
    "topk(3)": [dict(type="topk", k=3)],
    "score_threshold(0.5)": [dict(type="score_threshold", thr=0.5)],
    "containment(0.85)": [dict(type="containment", thr=0.85)],
    "mist(0.15,0.2)": [dict(type="mist")],
    "minmax_normalize": [dict(type="minmax_normalize")],
    "size_filter": [dict(type="size_filter", min_side=0.02, max_aspect=8.0)],
    "nms(0.5)": [dict(type="nms", thr=0.5)],
    "wbf(0.55)": [dict(type="wbf")],
    "weight": [dict(type="weight")],
}


def synthesize(n_images: int, per_image: int, n_classes: int = 20, seed: int = 0):
    """Flat arrays of a synthetic detector output and the split's images."""
    rng = np.random.default_rng(seed)
    n = n_images * per_image
    image_ids = np.repeat(np.arange(1, n_images + 1), per_image)
    w, h = 500.0, 375.0
    cx, cy = rng.uniform(0, w, n), rng.uniform(0, h, n)
    bw, bh = rng.uniform(10, w, n), rng.uniform(10, h, n)
    bboxes = np.stack(
        [
            np.clip(cx - bw / 2, 0, w),
            np.clip(cy - bh / 2, 0, h),
            np.clip(cx + bw / 2, 0, w),
            np.clip(cy + bh / 2, 0, h),
        ],
        1,
    )
    bboxes[:, 2:] = np.maximum(bboxes[:, 2:], bboxes[:, :2] + 1)
    scores = rng.beta(0.5, 3.0, n)
    labels = rng.integers(1, n_classes + 1, n)
    images = []
    for i in range(1, n_images + 1):
        k = int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))
        images.append(
            {
                "id": i,
                "file_name": f"JPEGImages/{i:06d}.jpg",
                "width": int(w),
                "height": int(h),
                "labels": sorted(rng.choice(n_classes, k, False) + 1),
            }
        )
    return image_ids, bboxes, scores, labels, images


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5011)
    ap.add_argument("--per-image", type=int, default=300)
    ap.add_argument("--no-json", action="store_true")
    args = ap.parse_args()

    image_ids, bboxes, scores, labels, images = synthesize(args.images, args.per_image)
    print(
        f"synthetic detections: {len(scores):,} boxes, {len(images):,} images, 20 classes, "
        f"{args.per_image} boxes/img, {np.mean([len(i['labels']) for i in images]):.2f} "
        "labels/img (seed 0)"
    )
    flat = (image_ids, bboxes, scores, labels, images)
    res, t = timed(lambda: denoise_arrays(*flat, build_chain(DEFAULT_STRATEGIES)))
    n_out = sum(len(d["scores"]) for d in res.values())
    print(f"  default chain (label_consistency->top1) {t:6.3f} s  -> {n_out:,} boxes")
    _, t_lc = timed(lambda: denoise_arrays(*flat, build_chain([])))
    print(f"  label_consistency alone              {t_lc:7.3f} s")
    for name, cfg in ONE_STRATEGY.items():
        res, t = timed(lambda cfg=cfg: denoise_arrays(*flat, build_chain(cfg)))
        n_out = sum(len(d["scores"]) for d in res.values())
        print(f"  label_consistency+{name:<20} {t:7.3f} s  -> {n_out:,} boxes")
    # all boxes of an image in its one labelled class: the worst case per image (200 images)
    one_cls = {
        "bboxes": bboxes[: args.per_image],
        "scores": scores[: args.per_image],
        "labels": np.ones(args.per_image, np.int64),
    }
    img = [{"id": i, "width": 500, "height": 375, "labels": [1]} for i in range(1, 201)]
    many = {i: one_cls for i in range(1, 201)}
    for name in ("containment(0.85)", "mist(0.15,0.2)", "nms(0.5)", "wbf(0.55)"):
        _, t = timed(lambda name=name: denoise_images(many, img, build_chain(ONE_STRATEGY[name])))
        print(
            f"  worst case {args.per_image} boxes of one class, {name:<18} "
            f"{1000 * t / len(img):6.2f} ms/img"
        )

    if args.no_json:
        return
    dets = [
        {
            "image_id": int(i),
            "category_id": int(c),
            "bbox": [round(float(v), 2) for v in (b[0], b[1], b[2] - b[0], b[3] - b[1])],
            "score": round(float(s), 6),
        }
        for i, b, s, c in zip(image_ids, bboxes, scores, labels, strict=True)
    ]
    split = {
        "images": images,
        "categories": [{"id": i, "name": f"c{i}"} for i in range(1, 21)],
        "info": {"data_root": "."},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dets.json")
        t0 = time.perf_counter()
        with open(path, "w") as f:
            json.dump(dets, f)
        t_w = time.perf_counter() - t0
        del dets
        size = os.path.getsize(path) / 2**20
        loaded, t_r = timed(lambda: load_detections(path, split))
        _, t_a = timed(lambda: detections_to_arrays(loaded))
    print(
        f"  json: write {t_w:.2f} s ({size:.0f} MiB), read+validate {t_r:.2f} s, "
        f"to arrays {t_a:.2f} s"
    )


if __name__ == "__main__":
    main()
