"""Test-time cost of the CAM head's group scorings (issue 54) against ``thresholded``.

What it measures (seeded, synthetic, nothing downloaded): one image at the VOC test scale (a
512 x 384 input: CAMs of 128 x 96 at 1/4), 20 smooth random class maps, ``--proposals``
random boxes, and for ``instances`` a displacement field toward two centres at 1/8; the box
scoring alone (``WSODCAMHead.grouped_scores``; ``thresholded``: ``score_boxes``), without the
network or the walk. Wall-clock ms per image, mean of ``--repeats`` runs, one torch thread.

Usage: ``python benchmarks/cam_grouping_speed.py [--proposals 2000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from wsod.models.roi_heads import WSODCAMHead  # noqa: E402
from wsod.models.roi_heads.cam_scoring import score_boxes  # noqa: E402

H, W, CLASSES = 96, 128, 20  # maps at 1/4 of 384 x 512


def inputs(proposals: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Normalised maps (C, H, W), boxes (R, 4) in map pixels, branch output (3, H/2, W/2)."""
    torch.manual_seed(0)
    cam = F.interpolate(torch.rand(1, CLASSES, H // 8, W // 8), size=(H, W), mode="bilinear")[0]
    cam = cam / cam.flatten(1).max(1).values[:, None, None]
    x1, y1 = torch.rand(proposals) * W * 0.7, torch.rand(proposals) * H * 0.7
    size = torch.rand(proposals, 2) * torch.tensor([50.0, 38.0]) + 10
    boxes = torch.stack([x1, y1, x1 + size[:, 0], y1 + size[:, 1]], 1)
    ys, xs = torch.meshgrid(
        torch.arange(H // 2).float(), torch.arange(W // 2).float(), indexing="ij"
    )
    cx = torch.where(xs < W // 4, W / 8.0, 3 * W / 8.0)
    out = torch.stack([H / 4.0 - ys, cx - xs, torch.full_like(xs, -5.0)])  # dy, dx, no boundary
    return cam, boxes, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposals", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cam, boxes, out = inputs(args.proposals)
    for kind in ("thresholded", "components", "instances"):
        branch = (
            dict(instance=dict(in_indices=(0,), in_channels=(4,))) if kind == "instances" else {}
        )
        head = WSODCAMHead(CLASSES, 4, 16, scoring=dict(type=kind), **branch)
        start = time.perf_counter()
        for _ in range(args.repeats):
            if kind == "thresholded":
                scores = score_boxes(cam, boxes, head.scoring)
            else:
                _, scores = head.grouped_scores(cam, boxes, out if kind == "instances" else None)
        ms = (time.perf_counter() - start) / args.repeats * 1000
        print(f"{kind}: {ms:.0f} ms / image, scores {tuple(scores.shape)}")


if __name__ == "__main__":
    main()
