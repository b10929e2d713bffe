"""Compose strategies into a chain and run it over every image.

A chain is configured as a list of dicts, e.g.
``[dict(type='label_consistency'), dict(type='containment', thr=0.85), dict(type='top1')]``.
:func:`build_chain` checks names and parameters, turns class names in ``exempt`` into ids, and
enforces image-label consistency as the first step: it is inserted when missing, and a chain
that places it later is rejected.

Default chain (``DEFAULT_STRATEGIES``): label consistency -> top-1 per labelled class. This is
the OICR/PCL retraining protocol: it needs no score threshold (WSOD scores are poorly
calibrated and differ between detectors), it never leaves a labelled class without a box when
the detector found one, and it gives the highest precision of the simple rules; the cost is
recall on images with several instances. Multi-instance chains (``mist``, SoS-WSOD's ``pgf``,
WeakSAM's min-max normalised scores + ``pgf``, thresholds with fallback, containment + NMS) are
measured side by side by ``wsod denoise --ablate``.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wsod import contracts
from wsod.denoise.common import as_dets, empty_dets
from wsod.denoise.ignore import FINAL_STRATEGIES
from wsod.denoise.pgf import SOS_NESTING_CLASSES
from wsod.denoise.registry import get_strategy, strategy_params

DEFAULT_STRATEGIES: list[dict] = [dict(type="label_consistency"), dict(type="top1")]

IMAGE_FILTER = dict(type="image_filter", min_score=0.2)

#: Chains compared by ``--ablate`` (name -> list of strategy dicts). A chain naming classes the
#: dataset lacks (``exempt``) is listed as skipped there.
ABLATION_CHAINS: dict[str, list[dict]] = {
    "raw (label consistency)": [dict(type="label_consistency")],
    "top1": [dict(type="top1")],
    "top3": [dict(type="topk", k=3)],
    "top1+image_filter0.2": [dict(type="top1"), dict(type="image_filter", min_score=0.2)],
    # the labelled half of a semi-supervised split (the other half: unlabelled images)
    "top1+reliable_images0.5": [dict(type="top1"), dict(type="reliable_images", fraction=0.5)],
    "thr0.5+fallback": [dict(type="score_threshold", thr=0.5)],
    "minmax+thr0.5": [dict(type="minmax_normalize"), dict(type="score_threshold", thr=0.5)],
    "nms0.4": [dict(type="nms", thr=0.4)],
    "contain0.85+nms0.4": [dict(type="containment", thr=0.85), dict(type="nms", thr=0.4)],
    "contain0.85+minmax+thr0.5": [
        dict(type="containment", thr=0.85),
        dict(type="minmax_normalize"),
        dict(type="score_threshold", thr=0.5),
    ],
    "mist(p0.15,iou0.2)": [dict(type="mist", p=0.15, thr=0.2)],
    "contain0.85+mist(p0.5,iou0.2)": [
        dict(type="containment", thr=0.85),
        dict(type="mist", p=0.5, thr=0.2),
    ],
    "wbf0.55+top1": [dict(type="wbf", thr=0.55), dict(type="top1")],
    # several boxes a class on the images the top1+image_filter0.2 chain keeps (the filter sees
    # the same best box per class either way, so only the boxes per class differ)
    "image_filter0.2+mist(p0.15,iou0.2)": [IMAGE_FILTER, dict(type="mist", p=0.15, thr=0.2)],
    "image_filter0.2+mist(p0.5,iou0.2)": [IMAGE_FILTER, dict(type="mist", p=0.5, thr=0.2)],
    "image_filter0.2+pgf(0.2,0.85)": [IMAGE_FILTER, dict(type="pgf", keep_thr=0.2)],
    "image_filter0.2+pgf(0.2,0.85,nest)": [
        IMAGE_FILTER,
        dict(type="pgf", keep_thr=0.2, exempt=list(SOS_NESTING_CLASSES)),
    ],
    "image_filter0.2+minmax+pgf(0.5,0.85)": [
        IMAGE_FILTER,
        dict(type="minmax_normalize"),
        dict(type="pgf", keep_thr=0.5),
    ],
    "image_filter0.2+minmax/class+pgf(0.5,0.85)": [
        IMAGE_FILTER,
        dict(type="minmax_normalize", per_class=True),
        dict(type="pgf", keep_thr=0.5),
    ],
    "size+contain0.85+nms0.4+thr0.3": [
        dict(type="size_filter", min_side=0.02, max_aspect=8.0),
        dict(type="containment", thr=0.85),
        dict(type="nms", thr=0.4),
        dict(type="minmax_normalize"),
        dict(type="score_threshold", thr=0.3),
    ],
}

Step = tuple[str, Any, dict]


def parse_strategies(spec: str | os.PathLike | Sequence[Mapping] | None) -> list[dict]:
    """A strategy list from a list, a JSON / python-literal string, or a .json / .py file.

    A .py file is read with mmengine's ``Config`` and must define ``strategies = [...]``.
    ``None`` gives ``DEFAULT_STRATEGIES``.
    """
    if spec is None:
        return [dict(s) for s in DEFAULT_STRATEGIES]
    if isinstance(spec, (list, tuple)):
        return [dict(s) for s in spec]
    text = os.fspath(spec)
    path = Path(text)
    if text.endswith((".py", ".json")):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such strategies file")
        if text.endswith(".py"):
            from mmengine.config import Config

            cfg = Config.fromfile(text).to_dict()
            if "strategies" not in cfg:
                raise ValueError(f"{path}: define `strategies = [dict(type=...), ...]`")
            value = cfg["strategies"]
        else:
            value = json.loads(path.read_text())
    else:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = _literal(text)
            except (ValueError, SyntaxError) as e:
                raise ValueError(
                    f"--strategies {text!r}: not JSON, a python literal or a .py/.json file; "
                    'write e.g. \'[{"type": "top1"}]\''
                ) from e
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, Mapping) for s in value):
        raise ValueError(f"strategies must be a list of dicts with 'type', got {value!r}")
    return [dict(s) for s in value]


class _DictCalls(ast.NodeTransformer):
    """Rewrite ``dict(a=1)`` calls into ``{'a': 1}`` so ``ast.literal_eval`` accepts them."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
            if any(k.arg is None for k in node.keywords):
                raise ValueError("dict(**x) is not allowed in --strategies")
            return ast.Dict(
                keys=[ast.Constant(k.arg) for k in node.keywords],
                values=[k.value for k in node.keywords],
            )
        raise ValueError(f"only dict(...) calls are allowed, got {ast.unparse(node)!r}")


def _literal(text: str) -> Any:
    """A python literal, also allowing ``dict(key=value)`` calls (evaluates no code)."""
    tree = _DictCalls().visit(ast.parse(text.strip(), mode="eval"))
    return ast.literal_eval(ast.fix_missing_locations(tree))


def build_chain(
    strategies: Sequence[Mapping] | None, categories: Mapping[str, int] | None = None
) -> list[Step]:
    """Check a strategy list and return ``[(name, fn, params), ...]``, consistency first.

    Args:
        strategies: list of ``dict(type=name, **params)``; None = ``DEFAULT_STRATEGIES``.
        categories: class name -> id, to resolve names in ``exempt`` lists.
    """
    cfgs = parse_strategies(strategies)
    steps: list[Step] = []
    for i, cfg in enumerate(cfgs):
        cfg = dict(cfg)
        if "type" not in cfg:
            raise ValueError(f"strategy #{i} {cfg!r} lacks 'type'")
        name = cfg.pop("type")
        fn = get_strategy(name)
        allowed = strategy_params(name)
        unknown = set(cfg) - set(allowed)
        if unknown:
            raise ValueError(
                f"strategy {name!r}: unknown parameters {sorted(unknown)}; "
                f"allowed: {allowed or 'none'}"
            )
        if "exempt" in cfg:
            cfg["exempt"] = _resolve_ids(cfg["exempt"], categories, name)
        if name == "label_consistency" and i > 0:
            raise ValueError(
                "label_consistency must be the first strategy (it is inserted when missing)"
            )
        if steps and steps[-1][0] in FINAL_STRATEGIES:
            raise ValueError(f"{steps[-1][0]} must be the last strategy (found {name!r} after it)")
        steps.append((name, fn, cfg))
    if not steps or steps[0][0] != "label_consistency":
        steps.insert(0, ("label_consistency", get_strategy("label_consistency"), {}))
    return steps


def _resolve_ids(values: Iterable, categories: Mapping[str, int] | None, name: str) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, str):
            if not categories or v not in categories:
                raise ValueError(f"strategy {name!r}: unknown class name {v!r} in 'exempt'")
            out.append(int(categories[v]))
        else:
            out.append(int(v))
    return out


def describe_chain(chain: Sequence[Step]) -> list[dict]:
    """The chain as a json-able list of ``dict(type=..., **params)``."""
    return [dict(type=name, **params) for name, _, params in chain]


def apply_chain(
    dets: Mapping[str, np.ndarray],
    chain: Sequence[Step],
    *,
    image_labels: Iterable[int],
    width: float,
    height: float,
) -> dict[str, np.ndarray]:
    """Run a built chain on one image's detection set (see :mod:`wsod.denoise.common`)."""
    out = as_dets(dets)
    labels = np.asarray(list(image_labels), np.int64)
    return _run_steps(out, chain, image_labels=labels, width=float(width), height=float(height))


def _run_steps(dets: dict, chain: Sequence[Step], **context) -> dict[str, np.ndarray]:
    """Run the steps in order; a strategy taking ``source`` gets the detections as they were
    after the first step (label consistency)."""
    source = None
    for k, (_, fn, params) in enumerate(chain):
        extra = {"source": source} if "source" in inspect.signature(fn).parameters else {}
        dets = fn(dets, **context, **extra, **params)
        if k == 0:
            source = dets
    return dets


def group_by_image(
    image_ids: np.ndarray, bboxes: np.ndarray, scores: np.ndarray, labels: np.ndarray
) -> dict[int, dict[str, np.ndarray]]:
    """Flat arrays of many images -> ``{image_id: detection set}`` (views, one stable sort;
    :func:`wsod.contracts.group_by_image`).

    Args:
        image_ids: (N,) int; bboxes: (N,4) x1y1x2y2; scores: (N,); labels: (N,) category ids.
    """
    return contracts.group_by_image(
        {
            "image_ids": np.asarray(image_ids, np.int64),
            "bboxes": np.asarray(bboxes, np.float64),
            "scores": np.asarray(scores, np.float64),
            "labels": np.asarray(labels, np.int64),
        }
    )


def denoise_images(
    dets_by_image: Mapping[int, Mapping[str, np.ndarray]],
    images: Sequence[Mapping],
    chain: Sequence[Step],
) -> dict[int, dict[str, np.ndarray]]:
    """Apply a chain to every image of a split, all images in one vectorised batch.

    Args:
        dets_by_image: ``{image_id: detection set}``; images without an entry have no boxes.
        images: split images (``id``, ``width``, ``height``, ``labels``).
        chain: from :func:`build_chain`.

    Returns:
        ``{image_id: detection set}`` for every image of ``images`` (the same boxes as
        :func:`apply_chain` image by image).
    """
    ids = [int(i) for i in dets_by_image]
    parts = [as_dets(dets_by_image[i]) for i in ids]
    n = [len(p["scores"]) for p in parts]
    cat = {
        k: np.concatenate([p[k] for p in parts]) if parts else empty_dets()[k]
        for k in ("bboxes", "scores", "labels")
    }
    return denoise_arrays(
        np.repeat(np.asarray(ids, np.int64), n),
        cat["bboxes"],
        cat["scores"],
        cat["labels"],
        images,
        chain,
    )


def denoise_arrays(
    image_ids: np.ndarray,
    bboxes: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    images: Sequence[Mapping],
    chain: Sequence[Step],
) -> dict[int, dict[str, np.ndarray]]:
    """Apply a chain to flat detections of many images (boxes of images not in ``images`` are
    ignored).

    Args:
        image_ids: (N,) int; bboxes: (N,4) x1y1x2y2; scores: (N,); labels: (N,) category ids.
        images: split images (``id``, ``width``, ``height``, ``labels``).
        chain: from :func:`build_chain`.

    Returns:
        ``{image_id: detection set}`` for every image of ``images``.
    """
    split_ids = np.array([int(im["id"]) for im in images], np.int64)
    srt = np.argsort(split_ids)
    image_ids = np.asarray(image_ids, np.int64)
    pos = np.clip(np.searchsorted(split_ids[srt], image_ids), 0, max(len(split_ids) - 1, 0))
    known = split_ids[srt][pos] == image_ids if len(split_ids) else np.zeros(len(image_ids), bool)
    batch = as_dets({"bboxes": bboxes, "scores": scores, "labels": labels})
    if not known.all():
        batch = {k: v[known] for k, v in batch.items()}
        pos = pos[known]
    batch["image_index"] = srt[pos]
    pairs = np.array(
        [(i, int(c)) for i, im in enumerate(images) for c in set(im["labels"])], np.int64
    ).reshape(-1, 2)
    width = np.array([im["width"] for im in images], np.float64)
    height = np.array([im["height"] for im in images], np.float64)
    batch = _run_steps(batch, chain, image_labels=pairs, width=width, height=height)
    return split_batch(batch, split_ids.tolist())


def split_batch(batch: Mapping[str, np.ndarray], image_ids: Sequence[int]) -> dict[int, dict]:
    """Batch detection set (with ``image_index``) -> ``{image_id: detection set}``."""
    ii = batch["image_index"]
    order = np.argsort(ii, kind="stable")
    bounds = np.searchsorted(ii[order], np.arange(len(image_ids) + 1))
    keys = [k for k in batch if k != "image_index"]
    sorted_arrays = {k: batch[k][order] for k in keys}
    return {
        img: {k: v[bounds[i] : bounds[i + 1]] for k, v in sorted_arrays.items()}
        for i, img in enumerate(image_ids)
    }


def flatten(results: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``{image_id: detection set}`` -> flat arrays with ``image_ids`` (N,), for the metrics."""
    ids = list(results)
    parts = [results[i] for i in ids]
    n = [len(p["scores"]) for p in parts]
    out = {
        "image_ids": np.repeat(np.asarray(ids, np.int64), n),
        "bboxes": np.concatenate([p["bboxes"] for p in parts]) if parts else np.zeros((0, 4)),
        "scores": np.concatenate([p["scores"] for p in parts]) if parts else np.zeros(0),
        "labels": np.concatenate([p["labels"] for p in parts]) if parts else np.zeros(0, int),
    }
    for extra in ("raw_scores", "weights", "ignore"):
        if parts and all(extra in p for p in parts):
            out[extra] = np.concatenate([p[extra] for p in parts])
    return out
