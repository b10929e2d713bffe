"""Names a user mistyped: the nearest known name, as a " (did you mean 'x'?)" hint for an error
message (a pipeline's sections and options, an option's choices, config types and files)."""

from __future__ import annotations

import difflib

# characters a reader (or a font) takes for one another: `topl` is `top1` mistyped, not `topk`
_LOOKALIKE = str.maketrans({"l": "1", "i": "1", "|": "1", "!": "1", "o": "0", "s": "5", "z": "2"})


def _shape(text: str) -> str:
    """``text`` with look-alike characters made one (``topl`` -> ``top1``, ``rn`` -> ``m``)."""
    return text.lower().replace("rn", "m").replace("vv", "w").translate(_LOOKALIKE)


def near_match(name: str, known) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, or an empty string. Closeness
    weighs the characters' shape before the edit ratio: among names as close by edits, the one
    that differs only by look-alike characters (``l``/``1``, ``O``/``0``, ...) wins."""
    known = sorted(known)
    if not difflib.get_close_matches(name, known, n=1, cutoff=0.6):
        return ""

    def score(k: str) -> tuple[float, float]:
        shape = difflib.SequenceMatcher(None, _shape(k), _shape(name)).ratio()
        return shape, difflib.SequenceMatcher(None, k, name).ratio()

    best = max((k for k in known if score(k)[1] >= 0.6 or score(k)[0] == 1.0), key=score)
    return f" (did you mean '{best}'?)"
