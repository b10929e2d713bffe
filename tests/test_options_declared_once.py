"""Each stage option is declared once, in its command's ``OPTIONS`` table
(:class:`wsod.utils.options.Option`): the table generates the parser and ``--help``, and the
pipeline's value check reads its type, choices and range from there.

Two ways an option could be declared a second time are refused, and each refusal is shown on a
planted duplicate: an ``add_argument`` written by hand for it (argparse's own declaration of
its type and default), and a dict keyed by option names outside the command modules (the old
``RANGES`` of ``wsod.pipeline.checks``, or a table of choices). A default that a help
text prints (``[2000]``) is read by the test from the one place that holds it, ``run``'s
signature or the training options dataclass, and must match.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import typing
from pathlib import Path

import pytest

from wsod.commands import STAGES, stage_actions, stage_declarations
from wsod.utils.options import Option

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "wsod"
# the one module that writes `add_argument` for a declared option (from its declaration)
GENERATOR = PACKAGE / "utils" / "options.py"


def _declared() -> dict[str, Option]:
    """Every stage's options, by flag (a flag shared by stages: one of them)."""
    return {o.flag: o for stage in STAGES for o in stage_declarations(stage).values()}


def _dests() -> set[str]:
    return {o.dest for o in _declared().values()}


def hand_written_arguments(source: str, flags: set[str]) -> list[str]:
    """``add_argument`` calls in ``source`` whose flag is a declared option's."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        found += [f"line {node.lineno}: add_argument({n!r})" for n in names if n in flags]
    return found


def _keys_and_values(node: ast.AST) -> list[tuple[str, ast.AST | None]]:
    """``(key, value)`` of a dict display, ``dict(k=v)`` or ``dict.fromkeys((k, ...), v)``."""
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)
        return [(k.value, v) for k, v in pairs if isinstance(k, ast.Constant)]
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    if isinstance(func, ast.Name) and func.id == "dict":
        return [(k.arg, k.value) for k in node.keywords if k.arg]
    if isinstance(func, ast.Attribute) and func.attr == "fromkeys" and node.args:
        keys = node.args[0]
        value = node.args[1] if len(node.args) > 1 else None
        elts = keys.elts if isinstance(keys, ast.Tuple | ast.List | ast.Set) else []
        return [(k.value, value) for k in elts if isinstance(k, ast.Constant)]
    return []


def _declares(value: ast.AST | None) -> bool:
    """Whether a dict value reads as an option's declaration: a range ``(low, high)`` of
    numbers or None, or choices (a tuple of strings). (A bare type is not counted: a file
    format's schema, ``metrics.json``'s ``{'split': str, ...}``, shares names with options.)"""
    if not isinstance(value, ast.Tuple | ast.List) or not value.elts:
        return False
    consts = [e.value for e in value.elts if isinstance(e, ast.Constant)]
    if len(consts) != len(value.elts):
        return False
    numbers = all(c is None or isinstance(c, int | float) for c in consts)
    return (len(consts) == 2 and numbers) or all(isinstance(c, str) for c in consts)


def option_tables(source: str, dests: set[str]) -> list[str]:
    """Dicts in ``source`` that declare an option's range or choices by its dest."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for key, value in _keys_and_values(node):
            if key in dests and _declares(value):
                found.append(f"line {node.lineno}: {key!r} -> {ast.unparse(value)}")
    return found


def _sources(skip: set[Path]) -> list[tuple[Path, str]]:
    return [(p, p.read_text()) for p in sorted(PACKAGE.rglob("*.py")) if p not in skip]


def test_no_argparse_argument_is_written_by_hand():
    flags = set(_declared())
    found = {
        str(p.relative_to(REPO)): hits
        for p, text in _sources({GENERATOR})
        if (hits := hand_written_arguments(text, flags))
    }
    assert found == {}, "declare the option in its command's OPTIONS table instead"


def test_no_option_is_declared_in_a_table_outside_its_command():
    commands = set((PACKAGE / "commands").glob("*.py"))
    found = {
        str(p.relative_to(REPO)): hits
        for p, text in _sources(commands)
        if (hits := option_tables(text, _dests()))
    }
    assert found == {}, "an option's range and choices belong to its Option"


def test_a_planted_duplicate_is_caught():
    """The two scans above fail on the duplicates they are there to stop."""
    ranges = "RANGES = {**dict.fromkeys(('max_boxes', 'workers'), (1, None)), 'beyond': (0, None)}"
    assert len(option_tables(ranges, _dests())) == 3
    choices = "CHOICES = {'mode': ('fast', 'quality')}\nLIMITS = dict(iou_thr=[0, 1])"
    assert len(option_tables(choices, _dests())) == 2
    # plain values keyed by option names (a quick pipeline's section) declare nothing
    assert option_tables("weak = dict(max_iters=10, config='c.py')", _dests()) == []
    by_hand = "def add(p):\n    p.add_argument('--max-boxes', type=int, help='boxes')\n"
    assert hand_written_arguments(by_hand, set(_declared())) == [
        "line 2: add_argument('--max-boxes')"
    ]
    # the real tree with one planted: checks.py as it was before the ranges moved
    checks = (PACKAGE / "pipeline" / "checks.py").read_text()
    assert option_tables(checks + "\n" + ranges + "\n", _dests())


@pytest.mark.parametrize("stage", STAGES)
def test_the_parser_is_generated_from_the_declarations(stage):
    actions = stage_actions(stage)
    for dest, option in stage_declarations(stage).items():
        action = actions[dest]
        assert action.option_strings == [option.flag]
        assert (action.type, action.nargs, action.metavar) == (
            option.type,
            option.nargs if not option.is_flag else 0,
            option.metavar,
        )
        assert action.choices == option.choices and action.help == option.help


def _run_defaults(stage: str) -> dict[str, object]:
    """The stage's real defaults: ``run``'s keyword defaults (and ``import_detections``'),
    a training stage's options dataclass fields."""
    module = importlib.import_module(f"wsod.stages.{stage}")
    functions = [module.run, getattr(module, "import_detections", None)]
    defaults = {
        n: p.default
        for fn in functions
        if fn is not None
        for n, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    hints = typing.get_type_hints(module.run)
    if "options" in hints:
        defaults.update(vars(hints["options"].__args__[0]()))
    return defaults


# a help text's default: a "[...]" holding a bare number or word (not "[the config's]")
_SHOWN = re.compile(r"\[([\w.]+)\]")


def _same(shown: str, value: object) -> bool:
    try:
        return float(shown) == float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return shown == str(value)


@pytest.mark.parametrize("stage", STAGES)
def test_a_default_shown_in_help_is_the_one_run_uses(stage):
    """(A None default is decided further down, e.g. ``--min-coverage``'s by the importer.)"""
    defaults = {k: v for k, v in _run_defaults(stage).items() if v is not None}
    shown = {
        dest: found[-1]
        for dest, o in stage_declarations(stage).items()
        if (found := _SHOWN.findall(o.help)) and dest in defaults
    }
    wrong = {d: (v, defaults[d]) for d, v in shown.items() if not _same(v, defaults[d])}
    assert wrong == {}, "help shows (this, run uses that)"
    if stage == "proposals":  # the test reads something: proposals' help shows six defaults
        assert {"max_boxes", "workers", "resize", "seed", "method", "mode"} <= set(shown)
    assert _same(shown.get("max_boxes", "2000"), 2000) and not _same("2000", 200)


def test_an_option_checks_its_own_range_type_and_choices():
    box = Option("--max-boxes", type=int, low=1, help="boxes")
    box.check(5, "w")
    for bad, why in [
        (0, "want a value >= 1"),
        (2.5, "want a whole number"),
        (True, "want a whole"),
    ]:
        with pytest.raises(ValueError, match=f"^w: {why}"):
            box.check(bad, "w")
    thr = Option("--iou-thr", type=float, low=0, high=1, help="iou")
    with pytest.raises(ValueError, match="from 0 to 1"):
        thr.check(1.5, "w")
    mode = Option("--mode", choices=("fast", "quality"), help="mode")
    with pytest.raises(ValueError, match=r"not one of fast, quality \(did you mean 'fast'\?\)"):
        mode.check("fats", "w")
    many = Option("--n", type=int, nargs="+", low=1, help="n")
    with pytest.raises(ValueError, match=">= 1"):
        many.check([3, 0], "w")
    flag = Option("--skip-bad", action="store_true", help="skip")
    with pytest.raises(ValueError, match="want True or False"):
        flag.check("yes", "w")
    with pytest.raises(ValueError, match="a range wants type int or float"):
        Option("--name", low=0, help="a range on a string")
