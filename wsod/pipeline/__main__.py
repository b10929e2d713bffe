"""``python -m wsod.pipeline``: see :func:`main`."""

from __future__ import annotations

from wsod.pipeline import (
    check_values,
    load_pipeline,
    write_quick_pipeline,
    write_section_stamps,
    write_vars_mk,
)

USAGE = (
    "usage: python -m wsod.pipeline PIPELINE_FILE [--check] [--quick OUT.py] [--stamps DIR] "
    "[--vars-mk FILE]"
)


def _parse(argv: list[str]) -> dict:
    if not argv or argv[0].startswith("-"):
        raise SystemExit(USAGE)
    opts: dict = {"path": argv[0], "check": False}
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg in ("--stamps", "--vars-mk", "--quick") and rest:
            opts[arg[2:].replace("-", "_")] = rest.pop(0)
        elif arg == "--check":
            opts["check"] = True
        else:
            raise SystemExit(USAGE)
    if not (opts.get("stamps") or opts.get("vars_mk") or opts["check"]):
        raise SystemExit(USAGE)
    return opts


def _check_derived(path: str, named: str) -> None:
    """:func:`check_values` of ``path``; when it is the quick look of ``named``, an error
    names both files (the user edits ``named``, never the generated one)."""
    try:
        check_values(path, named)
    except (ValueError, OSError, KeyError) as e:
        if path == named:
            raise
        raise ValueError(f"the quick look of {named} ({path}, generated): {e}") from None


def main(argv: list[str]) -> int:
    """``python -m wsod.pipeline FILE [--check] [--quick OUT] [--stamps DIR] [--vars-mk FILE]``:
    check every value (:func:`check_values`), write the quick-look pipeline
    (:func:`write_quick_pipeline`; the other outputs then describe it), the stamps and the make
    fragment. With ``--quick --check`` the user's file is checked as it is before the quick
    look is written and checked. No stamp or fragment is written when a check fails."""
    opts = _parse(argv)
    named = path = opts["path"]
    try:
        if opts.get("quick"):
            # the user's file first, as it is: the quick overlay replaces some of its values
            # (max_iters, affinity_start_iter, ...), which must not hide a wrong one
            if opts["check"]:
                check_values(named)
            else:
                load_pipeline(named)
            path = str(write_quick_pipeline(named, opts["quick"]))
        if opts["check"]:
            _check_derived(path, named)
        if opts.get("stamps"):
            write_section_stamps(path, opts["stamps"])
        if opts.get("vars_mk"):
            write_vars_mk(path, opts["vars_mk"], named)
    except (ValueError, OSError, KeyError) as e:
        raise SystemExit(f"wsod.pipeline: error: {e}") from None
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
