"""The suite's own rules, checked on its source (each check also runs on a planted snippet):

- every command a test starts is bounded in time: ``subprocess.run`` / ``check_output`` /
  ``check_call`` / ``call`` get a ``timeout`` (or the test uses :func:`procs.run_bounded`,
  which kills the whole process group), so one hung stage fails its test instead of hanging CI;
- no timed assertion: no ``assert`` on a duration measured with ``time.time()`` /
  ``perf_counter()`` / ``monotonic()`` (speed goals live in benchmarks/; a liveness deadline,
  ``time.time() < deadline``, is allowed);
- pytest-timeout is configured, so a test with no subprocess cannot hang either.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
RUN_FAMILY = {"run", "check_output", "check_call", "call"}
CLOCKS = {"time", "perf_counter", "monotonic"}


def unbounded_subprocesses(tree: ast.AST) -> list[int]:
    """Line numbers of ``subprocess.<run|check_output|check_call|call>(...)`` without
    ``timeout=``."""
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RUN_FAMILY
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "subprocess"
            and not any(k.arg == "timeout" for k in node.keywords)
        ):
            out.append(node.lineno)
    return out


def _is_clock(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def timed_assertions(tree: ast.AST) -> list[int]:
    """Line numbers of asserts on a duration (a name assigned ``clock() - start``)."""
    durations = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp):
            if isinstance(node.value.op, ast.Sub) and _is_clock(node.value.left):
                durations |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            subs = [
                n
                for n in ast.walk(node.test)
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and _is_clock(n.left)
            ]
            if names & durations or subs:
                out.append(node.lineno)
    return out


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p.name != "sitecustomize.py")


def test_every_started_command_has_a_timeout() -> None:
    found = [
        f"{p.relative_to(TESTS)}:{line}"
        for p in _test_files()
        for line in unbounded_subprocesses(ast.parse(p.read_text()))
    ]
    assert not found, "subprocess calls without timeout= (or use procs.run_bounded):\n" + "\n".join(
        found
    )
    planted = "subprocess.run(['make', 'all'], cwd=REPO)\nsubprocess.run(['x'], timeout=5)\n"
    assert unbounded_subprocesses(ast.parse(planted)) == [1]


def test_no_timed_assertion() -> None:
    found = [
        f"{p.relative_to(TESTS)}:{line}"
        for p in _test_files()
        for line in timed_assertions(ast.parse(p.read_text()))
    ]
    assert not found, "timed assertions (move speed goals to benchmarks/):\n" + "\n".join(found)
    planted = (
        "t0 = time.time()\nwall = time.time() - t0\nassert wall < 60\n"
        "assert time.perf_counter() - t0 < 1\n"
        "deadline = time.time() + 120\nassert time.time() < deadline\n"
    )
    assert timed_assertions(ast.parse(planted)) == [3, 4]


def test_every_test_has_a_time_limit() -> None:
    text = (TESTS.parent / "pyproject.toml").read_text()
    ini = text[text.index("[tool.pytest.ini_options]") :].split("\n[", 1)[0]
    limit = re.search(r"^timeout = (\d+)$", ini, re.M)
    assert limit and int(limit.group(1)) > 0, "pyproject.toml: set pytest-timeout's timeout"
