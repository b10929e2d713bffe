"""The weak stage's dataset wiring: point a dataloader's dataset config (possibly inside a
``RepeatDataset`` / ``ClassBalancedDataset``) at a weak-label split and its proposals.

The split is the training side's only annotation: images and image-level labels, no boxes.
Each function takes the stage's error class (``error``), so that a missing image folder or a
refused proposal file is reported as the stage's own error, naming the file and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

WRAPPERS = ("RepeatDataset", "ClassBalancedDataset")


def split_data_root(
    split: Mapping, split_path: str | os.PathLike, error: type[Exception] = ValueError
) -> Path:
    """The split's image folder (its ``info.data_root``, resolved as
    :func:`wsod.contracts.resolve_data_root` does), absolute.

    Raises:
        error: the folder does not exist.
    """
    from wsod.contracts import resolve_data_root

    root = resolve_data_root(split, split_path).resolve()
    if not root.is_dir():
        raise error(
            f"{split_path}: image folder {root} (info.data_root) not found; "
            "regenerate the split with `wsod data`"
        )
    return root


def set_split_dataset(
    ds_cfg: Any,
    split_path: str | os.PathLike,
    split: Mapping,
    proposals: str | os.PathLike | None,
    allow_pickle: bool = False,
    error: type[Exception] = ValueError,
) -> None:
    """Point ``ds_cfg`` at a split + its proposals (absolute paths; None: one whole-image box
    per image, for models that train on images alone). ``allow_pickle``: the user's
    ``--allow-pickle`` for a proposal ``.pkl`` without its ``.npz`` twin.

    Raises:
        error: the image folder is missing, or the proposal file is refused (before anything
            is wired).
    """
    while ds_cfg.get("type") in WRAPPERS:
        ds_cfg = ds_cfg.dataset
    if proposals is not None:
        from wsod.proposals.store import ProposalFileError, require_proposal_file

        try:
            require_proposal_file(proposals, split_path, allow_pickle)
        except ProposalFileError as e:
            raise error(str(e)) from None
    ds_cfg.ann_file = str(Path(split_path).resolve())
    ds_cfg.data_root = str(split_data_root(split, split_path, error))
    ds_cfg.data_prefix = {"img": ""}
    if proposals is None:
        ds_cfg.proposal_file = None
    else:
        from wsod.training.proposal_inputs import set_proposals

        set_proposals(ds_cfg, proposals, allow_pickle)
