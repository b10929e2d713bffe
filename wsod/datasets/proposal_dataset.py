"""mmdet's ``CocoDataset`` with precomputed proposals, for a strong detector without an RPN.

``WSODProposalCocoDataset`` is mmdet's ``CocoDataset`` (the strong stage's training
annotations, or a weak-label split in test mode) whose ``proposal_file`` is read as the
pipeline writes it: through :func:`wsod.proposals.store.load_proposals` (the safe ``.npz`` twin
when present; a ``.pkl`` without it only with ``allow_pickle``), keyed by each image's
``file_name`` (relative to the data root, e.g. ``JPEGImages/000005.jpg``), mmdet's
parent-folder/basename key as the fallback. mmdet's own ``BaseDetDataset.load_proposals``
unpickles any file and asserts that the file holds exactly the dataset's images; here the
file may hold more images (the whole split while the pseudo labels cover some of them) and an
image without proposals is an error naming the file and the fix.

``WSODPackDetInputs`` is ``PackDetInputs`` that also packs proposals kept as
``HorizontalBoxes`` (what ``WSODLoadProposals`` returns so that mmdet's
``ProposalBroadcaster(Resize, RandomFlip)`` can move them with the image): ``PackDetInputs``
alone only packs arrays. The detector then finds them in ``data_sample.proposals`` (mmdet's
``FastRCNN``: ``bboxes`` x1y1x2y2 in the resized image, ``scores``).

Proposals are detector inputs, not ground truth: nothing here opens a ground-truth box file.
"""

from __future__ import annotations

import os
import os.path as osp
from typing import Any

import numpy as np
from mmdet.datasets import CocoDataset
from mmdet.datasets.transforms import PackDetInputs
from mmdet.registry import DATASETS, TRANSFORMS
from mmdet.structures.bbox import BaseBoxes

from wsod.contracts import ContractError


def attach_proposals(
    data_list: list[dict],
    path: str | os.PathLike,
    ann_file: str | os.PathLike,
    allow_pickle: bool = False,
) -> None:
    """Give each item of ``data_list`` its ``proposals`` from ``path``.

    Keyed by the item's ``file_name`` (mmdet's parent-folder/basename key of ``img_path`` as
    the fallback); the file may hold more images than the list.

    Raises:
        ContractError: some images have no proposals (names the file, the split and the fix).
        wsod.proposals.store.ProposalFileError: the file cannot be read (a pickle without
            ``allow_pickle``, a stale ``.npz`` twin, a missing file).
    """
    from wsod.proposals.store import load_proposals

    props = load_proposals(path, allow_pickle=allow_pickle)
    missing = []
    for info in data_list:
        key = info["file_name"]
        if key not in props:
            img_path = info["img_path"]
            key = osp.join(osp.basename(osp.dirname(img_path)), osp.basename(img_path))
        if key not in props:
            missing.append(info["file_name"])
            continue
        info["proposals"] = props[key]
    if missing:
        raise ContractError(
            f"{path}: {len(missing)} images of {ann_file} have no proposals, e.g. "
            f"{missing[:3]}; run `wsod proposals` on this split"
        )


def proposal_path(proposal_file: str, data_root: str | None) -> str:
    """``proposal_file``, relative ones under ``data_root`` (as mmdet resolves it)."""
    if not osp.isabs(proposal_file) and data_root:
        return osp.join(data_root, proposal_file)
    return proposal_file


@DATASETS.register_module()
class WSODProposalCocoDataset(CocoDataset):
    """``CocoDataset`` + ``proposal_file`` read the pipeline's way (see the module docstring).

    Args:
        allow_pickle: unpickle a ``proposal_file`` that has no ``.npz`` twin (unpickling runs
            code: the user's ``--allow-pickle``); the twin needs no opt-in.
        **kwargs: ``CocoDataset`` arguments (``proposal_file`` included).
    """

    def __init__(self, *args: Any, allow_pickle: bool = False, **kwargs: Any) -> None:
        self.allow_pickle = allow_pickle
        super().__init__(*args, **kwargs)

    def parse_data_info(self, raw_data_info: dict) -> dict:
        info = super().parse_data_info(raw_data_info)
        info["file_name"] = raw_data_info["raw_img_info"]["file_name"]
        return info

    def load_proposals(self) -> None:
        path = proposal_path(self.proposal_file, self.data_root)
        attach_proposals(self.data_list, path, self.ann_file, self.allow_pickle)


@TRANSFORMS.register_module()
class WSODPackDetInputs(PackDetInputs):
    """``PackDetInputs`` that also packs ``HorizontalBoxes`` proposals (as float32 arrays)."""

    def transform(self, results: dict) -> dict:
        props = results.get("proposals")
        if isinstance(props, BaseBoxes):
            results["proposals"] = props.tensor.numpy().astype(np.float32)
        return super().transform(results)
