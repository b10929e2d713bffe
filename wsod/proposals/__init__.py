"""Region proposals: selective search, EdgeBoxes, imports, shared post-processing, storage.

The stage that drives them is :mod:`wsod.stages.proposals` (``wsod proposals``).
"""

from wsod.proposals.postprocess import postprocess, rank_scores
from wsod.proposals.store import load_proposals, save_proposals

__all__ = ["load_proposals", "postprocess", "rank_scores", "save_proposals"]
