"""The package's shape: small functions, and imports that only point down the layers.

Layers, top to bottom (README, "Layout"): ``cli``/``commands``/``pipeline``/``__main__`` ->
``stages`` (orchestration only) -> ``training`` (the one training flow) -> the domain packages
(``datasets``, ``proposals``, ``models``, ``denoise``, ``evaluation``, ``report``, ``weak``) ->
``contracts`` and ``utils``. A module may import its own layer's modules (no cycles) and any
lower layer, never a higher one. Imports inside functions count too: a lazy import is still a
dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "wsod"
MAX_FUNCTION_LINES = 80

LAYERS = {
    "cli": 4, "commands": 4, "pipeline": 4, "__main__": 4,
    "stages": 3,
    "training": 2,
    "datasets": 1, "proposals": 1, "models": 1, "denoise": 1, "evaluation": 1, "report": 1,
    "weak": 1,
    "contracts": 0, "utils": 0, "__init__": 0,
}  # fmt: skip


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("").parts
        out.append((".".join(rel[:-1] if rel[-1] == "__init__" else rel), path))
    return out


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top not in LAYERS:
        raise AssertionError(
            f"{module}: package wsod.{top} has no layer; add it to LAYERS and the README"
        )
    return LAYERS[top]


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    pkg = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("wsod"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("wsod"):
                found.add(name)
                # `from wsod.stages import data` imports the module wsod.stages.data
                found.update(f"{name}.{a.name}" for a in node.names if a.name != "*")
    return found


def _known(name: str, modules: set[str]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _long_functions(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{path.name}:{node.lineno} {node.name}() {n} lines")
    return out


def test_every_function_is_short() -> None:
    long = [f"{m}: {f}" for m, path in _modules() for f in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_imports_point_down() -> None:
    modules = {m for m, _ in _modules()} | {"wsod"}
    upward = []
    for module, path in _modules():
        for name in _imports(module, path):
            target = _known(name, modules)
            if target is None or target == "wsod":
                continue
            if _layer(target) > _layer(module):
                upward.append(f"{module} imports {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(sorted(upward))


def test_no_import_cycles() -> None:
    modules = {m for m, _ in _modules()}
    graph = {
        m: {
            t
            for n in _imports(m, p)
            if (t := _known(n, modules)) and t != m and not m.startswith(t + ".")
        }
        for m, p in _modules()
    }
    # a package's __init__ importing its own submodules is the package, not a cycle
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_checks_can_fail(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "\n\ndef g():\n    pass\n")
    assert _long_functions(src) == [f"mod.py:1 f() {MAX_FUNCTION_LINES + 1} lines"]
    src.write_text("from wsod.stages import data\nimport wsod.utils.io\nfrom . import sibling\n")
    assert _imports("wsod.utils.helper", src) == {
        "wsod.stages",
        "wsod.stages.data",
        "wsod.utils.io",
        "wsod.utils",
        "wsod.utils.sibling",
    }
    assert _layer("wsod.stages.data") > _layer("wsod.utils.helper")
