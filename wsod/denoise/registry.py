"""Name -> strategy function registry for the de-noise chain.

A strategy is ``f(dets, *, image_labels, width, height, **params) -> dets`` working on one
image's detection set (see :mod:`wsod.denoise.common`). Register one with
``@register_strategy('name')``; a chain names it with ``dict(type='name', **params)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

STRATEGIES: dict[str, Callable] = {}
# filled in by the chain, not by the user (``source``: the chain input after label consistency)
_COMMON = {"dets", "image_labels", "width", "height", "source"}


def register_strategy(name: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn`` under ``name`` (names are unique)."""

    def deco(fn: Callable) -> Callable:
        if name in STRATEGIES:
            raise KeyError(f"de-noise strategy {name!r} registered twice")
        STRATEGIES[name] = fn
        return fn

    return deco


def get_strategy(name: str) -> Callable:
    if name not in STRATEGIES:
        raise KeyError(
            f"unknown de-noise strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}"
        )
    return STRATEGIES[name]


def strategy_params(name: str) -> dict[str, object]:
    """The tunable parameters of a strategy and their defaults."""
    sig = inspect.signature(get_strategy(name))
    return {
        p.name: p.default
        for p in sig.parameters.values()
        if p.name not in _COMMON and p.kind is not inspect.Parameter.VAR_KEYWORD
    }
