"""How much a detector gains when its scores are multiplied by the black box's image-level
confidence (a diagnostic, not a test).

For every detection of class c in image i the score s becomes ``s x m(i, c)``, where ``m`` is
one of:

* ``black_box``: the highest score the black box gave class c anywhere in image i (the
  detection is dropped when it has none there): its image-level confidence, available for any
  black box, built-in or imported, from its detections on the same split (``wsod rescore``);
* ``image classifier`` (with ``--image-scores``): the same, from a file of one whole-image box
  per (image, class) scored with the CAM black box's class probability (``wsod proposals
  --method whole_image`` + the CAM config with ``model.roi_head.scoring.type=image``): no
  proposals needed at test time;
* ``labels`` (an oracle): 1 when c is among the image's labels in the split file, else the
  detection is dropped - the most any image-level rescoring could give.

The CAM black box's own scores are a box score times an image classifier's probability, which
is why it rarely fires on classes absent from the image; a detector trained on its boxes
confuses classes about as often as one trained on the real boxes
(docs/experiments/2026-12-03-why-retraining-does-not-help.md). This
measures what that image-level knowledge is worth to the retrained detector. It reads the
split's ground-truth boxes (``<split>_gt.json``) to score mAP: an evaluation tool.

Usage::

    .venv/bin/python benchmarks/rescore_by_black_box.py \\
        --gt work_dirs/voc07_cpu/data/val_gt.json --split work_dirs/voc07_cpu/data/val.json \\
        --black-box work_dirs/voc07_cpu/weak/val_dets.json \\
        --image-scores work_dirs/voc07_cpu/weak/val_image_scores.json \\
        --detections strong=work_dirs/voc07_cpu/strong/val_dets.json \\
        fsd=work_dirs/voc07_cpu/fsd/val_dets.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsod.contracts import detections_by_image, load_detections, load_split  # noqa: E402
from wsod.evaluation.gt import class_ids, class_names, gt_by_image, load_gt  # noqa: E402
from wsod.evaluation.voc import eval_voc  # noqa: E402
from wsod.stages.evaluate import named_paths  # noqa: E402
from wsod.stages.rescore import image_confidence, rescore_detections  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gt", required=True, help="the evaluation split's <split>_gt.json")
    ap.add_argument("--split", required=True, help="the split json (image labels: the oracle)")
    ap.add_argument("--black-box", required=True, help="the black box's detections on the split")
    ap.add_argument(
        "--detections", nargs="+", required=True, help="NAME=COCO results json (one per detector)"
    )
    ap.add_argument(
        "--image-scores",
        help="the CAM black box's image-level class scores on the split (whole-image boxes)",
    )
    ap.add_argument("--per-class", action="store_true", help="also print AP per class")
    args = ap.parse_args(argv)

    gt = load_gt(args.gt)
    gts, ids, names = gt_by_image(gt), class_ids(gt), class_names(gt)
    split = load_split(args.split)
    oracle = {(int(im["id"]), int(c)): 1.0 for im in split["images"] for c in im["labels"]}
    black_box = image_confidence(load_detections(args.black_box))
    factors = {"as is": None, "x black box": black_box}
    if args.image_scores:
        factors["x image classifier"] = image_confidence(load_detections(args.image_scores))
    factors["x labels (oracle)"] = oracle

    rows = []
    for name, path in named_paths(args.detections).items():
        dets = load_detections(path)
        for how, factor in factors.items():
            scored = dets if factor is None else rescore_detections(dets, factor)
            res = eval_voc(detections_by_image(scored), gts, ids)
            rows.append((name, how, res))
    print(f"{'detector':<10} {'scores':<20} {'mAP 11-pt':>9} {'mAP area':>9}")
    for name, how, res in rows:
        m = res["mAP"]
        print(f"{name:<10} {how:<20} {100 * m['11points']:>9.1f} {100 * m['area']:>9.1f}")
    if args.per_class:
        print("per class (11-point): " + " | ".join(f"{n} {h}" for n, h, _ in rows))
        for c in ids:
            aps = " ".join(f"{100 * r['per_class'][c]['ap']['11points']:6.1f}" for _, _, r in rows)
            print(f"{names[c]:<12} {aps}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
