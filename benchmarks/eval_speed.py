"""Speed of our VOC evaluator vs mmdet's ``eval_map`` on a VOC-sized synthetic case.

Case: 1,253 images (our VOC val), 20 classes, ~3 GT boxes per image (10 % difficult), ~100
detections per image (a jittered hit and a duplicate per object, the rest background boxes),
seeded. Both sides get the same arrays; the conversion to each side's input format is timed
separately and excluded. Each evaluator runs ``--repeats`` times; the best wall time
(``time.perf_counter``) is reported, with the mAPs so that agreement is visible too.

    .venv/bin/python benchmarks/eval_speed.py [--repeats 3] [--nproc 1 4]

``eval_map`` uses a multiprocessing pool of ``nproc`` workers (mmdet's default 4); each value
given is timed. If ``import mmdet`` fails (mmcv not installed) the script loads ``mean_ap.py``
straight from the installed mmdet package and says so.
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.evaluation.voc import eval_voc  # noqa: E402


def load_eval_map():
    """mmdet's ``eval_map`` and how it was imported."""
    try:
        from mmdet.evaluation.functional import eval_map

        return eval_map, "mmdet.evaluation.functional"
    except ImportError:
        import importlib.util

        spec = importlib.util.find_spec("mmdet")
        root = Path(spec.submodule_search_locations[0])
        for name, path in (
            ("mmdet", root),
            ("mmdet.evaluation", root / "evaluation"),
            ("mmdet.evaluation.functional", root / "evaluation" / "functional"),
        ):
            mod = types.ModuleType(name)
            mod.__path__ = [str(path)]
            sys.modules[name] = mod
        mean_ap = importlib.import_module("mmdet.evaluation.functional.mean_ap")
        return mean_ap.eval_map, f"{mean_ap.__file__} (loaded directly: import mmdet failed)"


def voc_sized_case(seed: int = 0, n_img: int = 1253, n_cls: int = 20, dets_per_img: int = 100):
    """Seeded (dets_by_image, gts_by_image); boxes x1y1x2y2 in a 500x375 frame."""
    rng = np.random.default_rng(seed)
    dets, gts = {}, {}
    for i in range(n_img):
        k = int(rng.integers(1, 6))
        xy = rng.uniform(0, 350, (k, 2))
        g = np.hstack([xy, xy + rng.uniform(20, 150, (k, 2))])
        labels = rng.integers(0, n_cls, k)
        gts[i] = {"bboxes": g, "labels": labels, "difficult": rng.random(k) < 0.1}
        hits = np.vstack([g + rng.normal(0, 8, g.shape), g + rng.normal(0, 8, g.shape)])
        hit_labels = np.r_[labels, labels]
        n_bg = max(dets_per_img - len(hits), 0)
        xy0 = rng.uniform(0, 450, (n_bg, 2))
        bg = np.hstack([xy0, xy0 + rng.uniform(10, 120, (n_bg, 2))])
        boxes = np.vstack([hits, bg])
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
        dets[i] = {
            "bboxes": boxes,
            "scores": rng.random(len(boxes)),
            "labels": np.r_[hit_labels, rng.integers(0, n_cls, n_bg)],
        }
    return dets, gts


def to_mmdet(dets, gts, n_cls):
    det_results, annotations = [], []
    for i in sorted(gts):
        d = dets[i]
        det_results.append(
            [
                np.hstack(
                    [d["bboxes"][d["labels"] == c], d["scores"][d["labels"] == c, None]]
                ).astype(np.float32)
                for c in range(n_cls)
            ]
        )
        g, diff = gts[i], gts[i]["difficult"]
        annotations.append(
            {
                "bboxes": g["bboxes"][~diff].astype(np.float32),
                "labels": g["labels"][~diff],
                "bboxes_ignore": g["bboxes"][diff].astype(np.float32),
                "labels_ignore": g["labels"][diff],
            }
        )
    return det_results, annotations


def best_time(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nproc", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--images", type=int, default=1253)
    args = ap.parse_args(argv)
    n_cls = 20
    eval_map, how = load_eval_map()
    dets, gts = voc_sized_case(n_img=args.images, n_cls=n_cls)
    n_dets = sum(len(d["scores"]) for d in dets.values())
    t0 = time.perf_counter()
    det_results, annotations = to_mmdet(dets, gts, n_cls)
    t_conv = time.perf_counter() - t0
    print(
        f"case: {len(gts)} images, {n_cls} classes, {n_dets} detections "
        f"({n_dets / len(gts):.1f}/image), "
        f"{sum(len(g['labels']) for g in gts.values())} GT boxes"
    )
    print(f"mmdet eval_map from: {how}")
    print(
        f"timing: best of {args.repeats} runs, time.perf_counter wall time, one process for "
        f"ours; input conversion for mmdet ({t_conv:.2f} s) not counted"
    )
    t_ours, ours = best_time(lambda: eval_voc(dets, gts, range(n_cls)), args.repeats)
    print(
        f"ours  eval_voc (both AP modes)       {t_ours:7.3f} s  mAP 11pt "
        f"{ours['mAP']['11points']:.5f} area {ours['mAP']['area']:.5f}"
    )
    for nproc in args.nproc:
        t_11, (m11, _) = best_time(
            lambda n=nproc: eval_map(
                det_results, annotations, eval_mode="11points", logger="silent", nproc=n
            ),
            args.repeats,
        )
        t_ar, (mar, _) = best_time(
            lambda n=nproc: eval_map(
                det_results, annotations, eval_mode="area", logger="silent", nproc=n
            ),
            args.repeats,
        )
        print(
            f"mmdet eval_map nproc={nproc} (11pt + area) {t_11 + t_ar:7.3f} s  mAP 11pt "
            f"{m11:.5f} area {mar:.5f}  -> ours is {(t_11 + t_ar) / t_ours:.2f}x faster "
            f"(one mode: {t_11:.3f} s, {t_11 / t_ours:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
