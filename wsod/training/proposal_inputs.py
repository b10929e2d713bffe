"""Precomputed proposals as an input of the strong stage (a detector without an RPN).

A strong config that reads proposals says so with ``reads_proposals = True`` (mmdet's
``FastRCNN`` in ``projects/fast_rcnn/configs/``); its datasets then get a ``proposal_file``: the
training split's proposals for training, each detected split's own for detection (``wsod
strong --train-proposals PKL --infer SPLIT:PROPOSALS:OUT``). This module checks that the
proposals and the config agree before anything is written, wires the files into a dataset
config and names the file whose content a run's fingerprint hashes (another proposal file
never resumes an old run). Proposals are detector inputs, not ground truth.

Why it stays in the core though only ``projects/fast_rcnn`` uses it today: any strong detector
without an RPN that trains on precomputed proposals (Fast R-CNN, a proposal classifier retrained
on the pseudo labels) plugs in here; the strong stage's flag ``--train-proposals`` is its public face.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

READS_PROPOSALS = "reads_proposals"
"""The config flag of a strong detector that reads precomputed proposals (default False)."""

FIX_MISSING = (
    "give the training split's proposals (--train-proposals, e.g. "
    "work_dirs/<run>/proposals/train.pkl from `wsod proposals`) and each detected split's "
    "(--infer SPLIT:PROPOSALS:OUT)"
)
FIX_UNREAD = (
    "drop --train-proposals and the PROPOSALS part of --infer, or use a config that reads "
    "them (projects/fast_rcnn/configs/)"
)


def reads_proposals(cfg: Any) -> bool:
    """Whether a strong config's detector reads precomputed proposals (``reads_proposals``)."""
    return bool(cfg.get(READS_PROPOSALS, False))


def check_proposals(
    cfg: Any,
    config: str | os.PathLike,
    train: tuple[str | os.PathLike | None, str | os.PathLike],
    infer: Sequence[tuple[Path, Path | None]],
    *,
    allow_pickle: bool = False,
    error: type[Exception] = ValueError,
) -> None:
    """Refuse proposals and a config that disagree, and unreadable proposal files.

    Args:
        cfg: the resolved config; config: its file (named in messages).
        train: ``(training proposals or None, the training file)``.
        infer: ``(split json, its proposals or None)`` per split to detect on.
        allow_pickle: the user's ``--allow-pickle`` for a ``.pkl`` without its ``.npz`` twin.
        error: the stage's error class.

    Raises:
        error: the message names the file and the fix.
    """
    from wsod.proposals.store import ProposalFileError, require_proposal_file

    train_props, train_file = train
    given = [(train_file, train_props)] if train_props is not None else []
    given += [(split, props) for split, props in infer if props is not None]
    if not reads_proposals(cfg):
        if given:
            raise error(
                f"{given[0][1]}: proposals given, but {config} does not read them (no "
                f"{READS_PROPOSALS} = True; its detector makes its own, e.g. an RPN); {FIX_UNREAD}"
            )
        return
    if train_props is None:
        raise error(
            f"{config}: this detector reads proposals ({READS_PROPOSALS} = True) and none were "
            f"given for the training file {train_file}; {FIX_MISSING}"
        )
    for split, props in infer:
        if props is None:
            raise error(
                f"{split}: {config} reads proposals and none were given to detect on this "
                f"split; give them as --infer {split}:PROPOSALS[:OUT]"
            )
    try:
        for split, props in given:
            require_proposal_file(props, split, allow_pickle)
    except ProposalFileError as e:
        raise error(str(e)) from None


def set_proposals(ds_cfg: Any, proposals: str | os.PathLike, allow_pickle: bool = False) -> None:
    """Point a (innermost) dataset config at ``proposals`` (absolute path); ``allow_pickle``
    passes the user's ``--allow-pickle`` on to the dataset."""
    ds_cfg.proposal_file = str(Path(proposals).resolve())
    if allow_pickle:
        ds_cfg.allow_pickle = True


def proposals_digest(proposals: str | os.PathLike | None) -> str:
    """SHA-256 of the file the dataset reads for ``proposals`` (the ``.npz`` twin when present),
    ``''`` for None: part of the strong run's fingerprint."""
    if proposals is None:
        return ""
    from wsod.proposals.store import proposal_file_read
    from wsod.utils.io import file_sha256

    return file_sha256(proposal_file_read(proposals))
