"""Keep a finished run's black-box outputs as small benchmark inputs in the repository.

A VOC run's black box takes 1.5-2 h on a 2-core CPU, and its files live in ``work_dirs/``
(not versioned): experiments on the pseudo labels (the oracle decomposition of issue 53, trust
signals, de-noise settings) would each wait for a new black box. This packs what they read into
a folder of a few hundred KB:

- ``pseudo_train.json.gz``: the run's pseudo labels (``denoise/pseudo_train.json``), whole;
- ``train_dets_top<K>.json.gz``: the black box's ``K`` best detections of each *labelled*
  class of each train image (``weak/train_dets.json`` has 100 an image over all 20 classes,
  ~22 MB): what ``label_consistency -> top1 -> image_filter`` de-noising and
  ``benchmarks/box_trust_signals.py`` read;
- each file's ``.meta.json`` sidecar as the run wrote it (commit, config, CPU, precision).

It reads the run's outputs only (no ground truth). ``gunzip -k`` gives the plain json the
stages and benchmarks take; the data splits come back with ``make data`` (deterministic).

Usage::

    .venv/bin/python benchmarks/pack_run_inputs.py --run work_dirs/voc07_cpu \\
        --out benchmarks/inputs/voc07_cpu_<commit> [--top 10]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def labelled_top_k(dets: list[dict], split: dict, k: int) -> list[dict]:
    """The ``k`` best-scored detections of each labelled (image, class) pair of ``split``, in
    the order of ``dets``; detections of unlabelled classes or unknown images are dropped."""
    labelled = {(im["id"], c) for im in split["images"] for c in im.get("labels", [])}
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, d in enumerate(dets):
        pair = (d["image_id"], d["category_id"])
        if pair in labelled:
            groups[pair].append(i)
    keep = set()
    for idx in groups.values():
        keep.update(sorted(idx, key=lambda i: -dets[i]["score"])[:k])
    return [d for i, d in enumerate(dets) if i in keep]


def write_gz(path: Path, obj) -> int:
    """Write ``obj`` as gzipped json (fixed mtime: the same content gives the same bytes);
    returns the file's size."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(obj, separators=(",", ":")).encode())
    return path.stat().st_size


def copy_sidecar(src: Path, dst: Path) -> None:
    meta = Path(f"{src}.meta.json")
    if meta.is_file():
        shutil.copy(meta, Path(f"{dst}.meta.json"))


def pack(run: Path, out: Path, top: int) -> dict[str, int]:
    """Pack ``run``'s pseudo labels and labelled top-``top`` train detections into ``out``;
    returns each written file's size in bytes."""
    pseudo_path = run / "denoise" / "pseudo_train.json"
    dets_path, split_path = run / "weak" / "train_dets.json", run / "data" / "train.json"
    for p in (pseudo_path, dets_path, split_path):
        if not p.is_file():
            raise SystemExit(f"{p}: not found; finish the run first (make denoise RUN={run})")
    out.mkdir(parents=True, exist_ok=True)
    split = json.loads(split_path.read_text())
    dets = json.loads(dets_path.read_text())
    sizes = {
        "pseudo_train.json.gz": write_gz(
            out / "pseudo_train.json.gz", json.loads(pseudo_path.read_text())
        )
    }
    copy_sidecar(pseudo_path, out / "pseudo_train.json")
    name = f"train_dets_top{top}.json"
    kept = labelled_top_k(dets, split, top)
    sizes[f"{name}.gz"] = write_gz(out / f"{name}.gz", kept)
    copy_sidecar(dets_path, out / name)
    print(f"{len(kept)} of {len(dets)} train detections kept (top {top} of each labelled class)")
    return sizes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--run", required=True, type=Path, help="a finished run folder (work_dirs/<name>)"
    )
    ap.add_argument("--out", required=True, type=Path, help="the folder to write")
    ap.add_argument("--top", type=int, default=10, help="detections kept per labelled class [10]")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error("--top must be >= 1")
    for name, size in pack(args.run, args.out, args.top).items():
        print(f"{args.out / name}: {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
