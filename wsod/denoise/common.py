"""Array helpers shared by the de-noise strategies.

A *detection set* is a dict of aligned arrays: ``bboxes`` (N,4) float64 x1y1x2y2 pixels,
``scores`` (N,) float64, ``labels`` (N,) int64 category ids, and optionally ``weights`` (N,)
(per-box training weight), ``raw_scores`` (N,) (the detector's score, saved by a strategy that
rewrites ``scores``), ``ignore`` (N,) int (1 = an ignore region, not a pseudo box) and
``image_index`` (N,) int64. :func:`take` subsets all of them at once.

Strategies are written once for two call forms:

* one image: no ``image_index``; ``image_labels`` (L,) category ids; ``width``/``height``
  numbers;
* a batch of images (how :func:`wsod.denoise.chain.denoise_images` runs a whole split in one
  vectorised pass): ``image_index`` (N,) gives each box's image position ``i``;
  ``image_labels`` is (K,2) rows ``(i, category_id)``; ``width``/``height`` are (I,) arrays.

Per-class operations then act on *groups*: boxes with the same (image, class).

Ranking rule used by every strategy (so ties are defined once): within a group, boxes are
ordered by score descending, then by position in the input (earlier first). Rank 0 is the
group's top box.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

ARRAY_KEYS = ("bboxes", "scores", "labels", "weights", "raw_scores", "ignore", "image_index")
LABEL_SPAN = 1 << 24  # category ids must be below this (group key = image * SPAN + class)
MAX_PAIRS = 4_000_000  # pairwise work is chunked over whole groups to bound memory


def empty_dets() -> dict[str, np.ndarray]:
    """A detection set with no boxes."""
    return {
        "bboxes": np.zeros((0, 4), np.float64),
        "scores": np.zeros(0, np.float64),
        "labels": np.zeros(0, np.int64),
    }


def as_dets(dets: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Normalise a detection set to float64/int64 arrays of the right shapes (checks lengths)."""
    out = dict(dets)
    out["bboxes"] = np.asarray(dets["bboxes"], np.float64).reshape(-1, 4)
    out["scores"] = np.asarray(dets["scores"], np.float64).reshape(-1)
    out["labels"] = np.asarray(dets["labels"], np.int64).reshape(-1)
    n = len(out["scores"])
    for k in ARRAY_KEYS:
        if k in out and len(out[k]) != n:
            raise ValueError(f"detection arrays disagree: {len(out[k])} {k} for {n} scores")
    return out


def take(dets: Mapping[str, np.ndarray], idx: np.ndarray) -> dict[str, np.ndarray]:
    """Subset every per-box array of ``dets`` by ``idx`` (int indices or a bool mask)."""
    idx = np.asarray(idx)
    if idx.dtype == bool:
        idx = np.flatnonzero(idx)
    out = dict(dets)
    for k in ARRAY_KEYS:
        if k in dets:
            out[k] = dets[k][idx]
    return out


# --------------------------------------------------------------------------- batch context
def image_index(dets: Mapping[str, np.ndarray]) -> np.ndarray:
    """(N,) image position of each box (zeros for a single image)."""
    ii = dets.get("image_index")
    return np.zeros(len(dets["scores"]), np.int64) if ii is None else ii


def group_keys(dets: Mapping[str, np.ndarray]) -> np.ndarray:
    """(N,) int64 key of each box's (image, class) group."""
    return image_index(dets) * LABEL_SPAN + dets["labels"]


def labelled_keys(image_labels: np.ndarray) -> np.ndarray:
    """Group keys of the labelled (image, class) pairs: (L,) ids or (K,2) ``(i, id)`` rows."""
    il = np.asarray(image_labels, np.int64)
    if il.ndim == 2:
        return il[:, 0] * LABEL_SPAN + il[:, 1]
    return il.reshape(-1)


def image_sizes(dets: Mapping[str, np.ndarray], width, height) -> tuple[np.ndarray, np.ndarray]:
    """(N,) width and height of each box's image."""
    n = len(dets["scores"])
    w, h = np.asarray(width, np.float64), np.asarray(height, np.float64)
    if w.ndim == 0:
        return np.full(n, float(w)), np.full(n, float(h))
    ii = image_index(dets)
    return w[ii], h[ii]


# --------------------------------------------------------------------------- segments
def class_rank(keys: np.ndarray, scores: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Rank of each box within its group (0 = top), ties broken by input order.

    Args:
        keys: (N,) group keys (class ids for one image, or :func:`group_keys`).
        scores: (N,) scores.
        valid: optional (N,) bool; invalid boxes rank after every valid box of their group.

    Returns:
        (N,) int64 ranks.
    """
    n = len(scores)
    if n == 0:
        return np.zeros(0, np.int64)
    sort_keys = [np.arange(n), -scores]
    if valid is not None:
        sort_keys.append(~np.asarray(valid, bool))
    sort_keys.append(keys)
    order = np.lexsort(sort_keys)
    sk = keys[order]
    pos = np.arange(n)
    start = np.r_[True, sk[1:] != sk[:-1]]
    seg_start = np.maximum.accumulate(np.where(start, pos, 0))
    rank = np.empty(n, np.int64)
    rank[order] = pos - seg_start
    return rank


def group_sizes(keys: np.ndarray) -> np.ndarray:
    """(N,) number of boxes in each box's group."""
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inv]


def classes_with(keys: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(N,) bool: whether the box's group has at least one box where ``mask`` is True."""
    if len(keys) == 0:
        return np.zeros(0, bool)
    uniq, inv = np.unique(keys, return_inverse=True)
    hit = np.bincount(inv, weights=np.asarray(mask, np.float64), minlength=len(uniq)) > 0
    return hit[inv]


def segment_minmax(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N,) min and max of ``values`` over each box's segment (boxes with equal ``keys``)."""
    if len(keys) == 0:
        return values.copy(), values.copy()
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    seg = np.cumsum(np.r_[True, sk[1:] != sk[:-1]]) - 1
    lo = np.minimum.reduceat(values[order], starts)[seg]
    hi = np.maximum.reduceat(values[order], starts)[seg]
    out_lo, out_hi = np.empty_like(values), np.empty_like(values)
    out_lo[order], out_hi[order] = lo, hi
    return out_lo, out_hi


def group_chunks(keys: np.ndarray, max_pairs: int = MAX_PAIRS) -> Iterator[np.ndarray]:
    """Yield index arrays of whole groups whose pair count stays near ``max_pairs``."""
    n = len(keys)
    if n == 0:
        return
    uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    pairs = counts * (counts - 1) // 2
    if pairs.sum() <= max_pairs:
        yield np.arange(n)
        return
    chunk_of_group = np.cumsum(pairs) // max(1, max_pairs)
    chunk = chunk_of_group[inv]
    order = np.argsort(chunk, kind="stable")
    cuts = np.flatnonzero(np.diff(chunk[order])) + 1
    yield from np.split(order, cuts)


def ranked_pairs(keys: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All same-group pairs ``(lo, hi)`` where box ``hi`` ranks above box ``lo``.

    Args:
        keys: (N,) group keys; rank: (N,) from :func:`class_rank` on the same keys.

    Returns:
        Two (P,) int64 index arrays, P = sum over groups of n(n-1)/2.
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((rank, keys))
    pos = np.arange(n)
    sk = keys[order]
    start = np.r_[True, sk[1:] != sk[:-1]]
    gstart = np.maximum.accumulate(np.where(start, pos, 0))
    off = pos - gstart  # number of boxes above each box in its group
    total = int(off.sum())
    lo_pos = np.repeat(pos, off)
    hi_pos = np.repeat(gstart, off) + (np.arange(total) - np.repeat(np.cumsum(off) - off, off))
    return order[lo_pos], order[hi_pos]


def pair_iou(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise intersection, IoU and area of ``a`` for (P,4) box arrays ``a`` and ``b``."""
    lt = np.maximum(a[:, :2], b[:, :2])
    rb = np.minimum(a[:, 2:], b[:, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[:, 0] * wh[:, 1]
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a + area_b - inter
    iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return inter, iou, area_a


def greedy_nms_groups(
    boxes: np.ndarray, keys: np.ndarray, rank: np.ndarray, thr: float, inclusive: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Exact greedy NMS inside every group at once.

    Boxes are visited in rank order; a box survives unless a surviving box ranked above it in
    its group overlaps it with IoU > ``thr`` (``>= thr`` when ``inclusive``, MIST's "keep only if
    IoU < thr"). Vectorised over groups: one step per rank level, each step touches only the
    overlapping pairs of that level.

    Args:
        boxes: (N,4) x1y1x2y2; keys: (N,) group keys; rank: (N,) from :func:`class_rank`.

    Returns:
        ``keep`` (N,) bool and ``owner`` (N,) int64: for a suppressed box, the index of the
        first (best-ranked) surviving box that suppressed it; a survivor owns itself.
    """
    n = len(keys)
    keep = np.ones(n, bool)
    owner = np.arange(n)
    for sel in group_chunks(keys):
        lo, hi = ranked_pairs(keys[sel], rank[sel])
        if len(lo) == 0:
            continue
        b = boxes[sel]
        _, iou, _ = pair_iou(b[lo], b[hi])
        hit = iou >= thr if inclusive else iou > thr
        lo, hi = lo[hit], hi[hit]
        r_hi = rank[sel][hi]
        o = np.argsort(r_hi, kind="stable")
        lo, hi, r_hi = lo[o], hi[o], r_hi[o]
        cuts = np.flatnonzero(np.diff(r_hi)) + 1
        sup = np.zeros(len(sel), bool)
        own = np.arange(len(sel))
        for a, e in zip(np.r_[0, cuts], np.r_[cuts, len(lo)], strict=True):
            lo_s, hi_s = lo[a:e], hi[a:e]
            act = ~sup[hi_s] & ~sup[lo_s]
            sup[lo_s[act]] = True
            own[lo_s[act]] = hi_s[act]
        keep[sel] = ~sup
        owner[sel] = sel[own]
    return keep, owner
