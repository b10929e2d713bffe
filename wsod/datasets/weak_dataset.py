"""mmdet dataset and transforms for weak-label splits + precomputed proposals.

``WSODWeakDataset`` reads a weak-label split json (``wsod.contracts.load_split``: images with
image-level ``labels``, **no boxes**) and the proposals of its images (mmdet's proposal
contract, ``proposal_file``; the ``.npz`` twin is preferred when present). Each data item::

    {"img_path", "img_id", "height", "width", "file_name",
     "image_labels": [0-based class indices], "instances": [], "proposals": {bboxes, scores}}

Proposals are keyed by the split's ``file_name`` (relative to the data root, e.g.
``JPEGImages/000005.jpg``); mmdet's parent-folder/basename key is the fallback.

Pipeline transforms:

* ``WSODLoadProposals``: like mmdet's ``LoadProposals`` (first ``num_max_proposals`` boxes, the
  file is sorted by score) plus a minimum size filter and an optional random subset
  (``num_sample``, for cheap training), returned as ``HorizontalBoxes`` so that mmdet's
  ``ProposalBroadcaster(Resize, RandomFlip)`` transforms them with the image.
* ``WSODPackWeakInputs``: mmdet's ``PackDetInputs`` plus ``image_labels`` in the metainfo and
  the proposals as a float tensor (``data_sample.proposals.bboxes``, x1y1x2y2 in the resized
  image).

Seeds (optional, ``seed_file``): another weak detector's detections on the same split (a COCO
results json, e.g. the CAM black box's ``train_dets.json``). ``WSODLoadProposals`` turns them
into per-proposal class scores ``seed_scores`` (R, C): for class c, the best ``score x IoU``
over that class's seed boxes (a seed box that is itself a proposal gives that proposal its
score). ``WSODOICRHead`` then supervises its first refinement branch with them instead of the
WSDDN scores (CAM -> OICR). Seeds are detector outputs, never ground truth.

Invariant: nothing here opens a ground-truth box file; ``instances`` is always empty.
"""

from __future__ import annotations

import os
import os.path as osp
from typing import Any

import numpy as np
import torch
from mmcv.transforms import BaseTransform
from mmdet.datasets import BaseDetDataset
from mmdet.registry import DATASETS, TRANSFORMS
from mmdet.structures.bbox import HorizontalBoxes

from wsod.contracts import detections_by_image, load_detections, load_split
from wsod.datasets.proposal_dataset import WSODPackDetInputs, attach_proposals, proposal_path
from wsod.utils.boxes import box_iou


def read_proposal_file(
    path: str | os.PathLike, allow_pickle: bool = False
) -> dict[str, dict[str, np.ndarray]]:
    """Proposals ``{file_name: {"bboxes": (N,4) x1y1x2y2, "scores": (N,)}}`` from .pkl/.npz.

    The safe ``.npz`` twin is read whenever it exists (and is not stale); a ``.pkl`` without
    one is unpickled only with the user's opt-in (``allow_pickle``, ``--allow-pickle``).
    """
    from wsod.proposals.store import load_proposals

    return load_proposals(path, allow_pickle=allow_pickle)


@DATASETS.register_module()
class WSODWeakDataset(BaseDetDataset):
    """Weak-label split (image-level labels) + precomputed proposals.

    Args:
        ann_file: the split json written by ``wsod data`` (``<split>.json``).
        data_root: image root; ``None`` takes the split's ``info.data_root``.
        proposal_file: proposals (.pkl mmdet contract, or its .npz twin); None: one
            whole-image box per image, for models that train on images alone (the CAM head:
            configs with ``train_reads_proposals = False``).
        filter_empty: drop images without any label (training only: they teach no class).
        allow_pickle: unpickle a ``proposal_file`` that has no ``.npz`` twin (unpickling runs
            code: the user's ``--allow-pickle``); the twin needs no opt-in.
        seed_file: optional detections of another weak detector on this split (COCO results
            json, see the module docstring); each item gets ``seeds`` (bboxes x1y1x2y2, scores,
            0-based labels, ``num_classes``).
        **kwargs: ``BaseDetDataset`` arguments (pipeline, test_mode, indices, ...).
    """

    METAINFO: dict = {"classes": ()}

    def __init__(
        self,
        *args: Any,
        filter_empty: bool = False,
        seed_file: str | os.PathLike | None = None,
        allow_pickle: bool = False,
        **kwargs: Any,
    ) -> None:
        self.filter_empty = filter_empty
        self.allow_pickle = allow_pickle
        self.seed_file = seed_file
        super().__init__(*args, **kwargs)

    def load_data_list(self) -> list[dict]:
        split = load_split(self.ann_file)
        cats = sorted(split["categories"], key=lambda c: c["id"])
        index_of = {c["id"]: i for i, c in enumerate(cats)}
        self._metainfo["classes"] = tuple(c["name"] for c in cats)
        self._metainfo["category_ids"] = tuple(c["id"] for c in cats)
        img_root = self.data_prefix.get("img") or self.data_root
        if not img_root:
            from wsod.contracts import resolve_data_root

            img_root = str(resolve_data_root(split, self.ann_file))
        data_list = []
        for im in split["images"]:
            data_list.append(
                {
                    "img_path": osp.join(img_root, im["file_name"]),
                    "file_name": im["file_name"],
                    "img_id": im["id"],
                    "height": int(im["height"]),
                    "width": int(im["width"]),
                    "image_labels": sorted({index_of[c] for c in im["labels"]}),
                    "instances": [],
                }
            )
            if self.proposal_file is None:
                w, h = float(im["width"]), float(im["height"])
                data_list[-1]["proposals"] = {
                    "bboxes": np.array([[0.0, 0.0, w, h]], np.float32),
                    "scores": np.ones(1, np.float32),
                }
        if self.seed_file:
            self._attach_seeds(data_list, split, index_of)
        return data_list

    def _attach_seeds(self, data_list: list[dict], split: dict, index_of: dict) -> None:
        dets = load_detections(self.seed_file, split)  # ids / classes checked against split
        by_image = detections_by_image(dets)
        to_index = np.vectorize(index_of.__getitem__, otypes=[np.int64])
        for info in data_list:
            d = by_image.get(info["img_id"])
            if d is None:
                d = {"bboxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0)}
            info["seeds"] = {
                "bboxes": d["bboxes"].astype(np.float32),
                "scores": d["scores"].astype(np.float32),
                "labels": to_index(d["labels"]) if len(d["labels"]) else np.zeros(0, np.int64),
                "num_classes": len(index_of),
            }

    def load_proposals(self) -> None:
        """Attach ``proposals`` to each item, keyed by ``file_name`` (mmdet key as fallback)."""
        path = proposal_path(self.proposal_file, self.data_root)
        attach_proposals(self.data_list, path, self.ann_file, self.allow_pickle)

    def filter_data(self) -> list[dict]:
        if self.test_mode or not self.filter_empty:
            return self.data_list
        return [d for d in self.data_list if d["image_labels"]]

    def get_cat_ids(self, idx: int) -> list[int]:
        return list(self.get_data_info(idx)["image_labels"])


def seed_scores(proposals: np.ndarray, seeds: dict) -> np.ndarray:
    """(R, C) seed class scores of proposals: per class, max over its seed boxes of
    ``score x IoU(proposal, seed box)`` (0 for classes without seeds).

    Args:
        proposals: (R, 4) x1y1x2y2, the same pixels as the seed boxes (original image).
        seeds: ``{"bboxes": (N,4), "scores": (N,), "labels": (N,) 0-based, "num_classes": C}``.
    """
    out = np.zeros((len(proposals), seeds["num_classes"]), np.float32)
    if len(seeds["bboxes"]) == 0 or len(proposals) == 0:
        return out
    weighted = box_iou(proposals, seeds["bboxes"]) * seeds["scores"][None, :]  # (R, N)
    for c in np.unique(seeds["labels"]):
        out[:, c] = weighted[:, seeds["labels"] == c].max(axis=1)
    return out


@TRANSFORMS.register_module()
class WSODLoadProposals(BaseTransform):
    """Load an item's proposals as ``HorizontalBoxes`` (x1y1x2y2, original image pixels).

    Args:
        num_max_proposals: keep the first N (files are sorted by score); None keeps all.
        min_size: drop boxes whose width or height is below this (pixels).
        num_sample: if set, a random subset of this many (training: fewer RoIs per step).
    """

    def __init__(
        self,
        num_max_proposals: int | None = None,
        min_size: float = 0.0,
        num_sample: int | None = None,
    ) -> None:
        self.num_max_proposals = num_max_proposals
        self.min_size = min_size
        self.num_sample = num_sample

    def transform(self, results: dict) -> dict:
        props = results["proposals"]
        bboxes = np.asarray(props["bboxes"], dtype=np.float32).reshape(-1, 4)
        scores = props.get("scores")
        scores = (
            np.zeros(len(bboxes), np.float32)
            if scores is None
            else np.asarray(scores, np.float32).reshape(-1)
        )
        if self.min_size > 0:
            wh = bboxes[:, 2:] - bboxes[:, :2]
            keep = np.all(wh >= self.min_size, axis=1)
            if keep.any():
                bboxes, scores = bboxes[keep], scores[keep]
        if self.num_max_proposals is not None:
            bboxes = bboxes[: self.num_max_proposals]
            scores = scores[: self.num_max_proposals]
        if self.num_sample is not None and len(bboxes) > self.num_sample:
            idx = np.sort(np.random.choice(len(bboxes), self.num_sample, replace=False))
            bboxes, scores = bboxes[idx], scores[idx]
        if len(bboxes) == 0:
            # an image without proposals still gets one whole-image box so the MIL head works
            h, w = results["ori_shape"] if "ori_shape" in results else results["img_shape"]
            bboxes = np.array([[0, 0, w, h]], np.float32)
            scores = np.zeros(1, np.float32)
        results["proposals"] = HorizontalBoxes(bboxes)
        results["proposals_scores"] = scores
        if "seeds" in results:
            results["proposals_seed_scores"] = seed_scores(bboxes, results["seeds"])
        return results

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(num_max_proposals={self.num_max_proposals}, "
            f"min_size={self.min_size}, num_sample={self.num_sample})"
        )


@TRANSFORMS.register_module()
class WSODPackWeakInputs(WSODPackDetInputs):
    """``PackDetInputs`` + ``image_labels`` (metainfo, 0-based class indices); proposals may
    be ``HorizontalBoxes`` (:class:`~wsod.datasets.proposal_dataset.WSODPackDetInputs`)."""

    def __init__(
        self,
        meta_keys=(
            "img_id",
            "img_path",
            "ori_shape",
            "img_shape",
            "scale_factor",
            "flip",
            "flip_direction",
            "image_labels",
        ),
    ):
        super().__init__(meta_keys=meta_keys)

    def transform(self, results: dict) -> dict:
        results.setdefault("image_labels", [])
        results.setdefault("flip", False)
        results.setdefault("flip_direction", None)
        packed = super().transform(results)
        if "proposals_seed_scores" in results:
            packed["data_samples"].proposals.seed_scores = torch.from_numpy(
                np.ascontiguousarray(results["proposals_seed_scores"], np.float32)
            )
        return packed
