"""The package's shape: small functions and modules, and imports that only point down the layers.

Layers, top to bottom (README, "Layers"): ``cli``/``commands``/``pipeline``/``__main__`` ->
``stages`` (orchestration only) -> ``training`` (the one training flow) -> the domain packages
(``datasets``, ``proposals``, ``detections``, ``models``, ``denoise``, ``evaluation``,
``report``, ``rescoring``) -> ``contracts`` and ``utils``. A module may import its own layer's
modules (no cycles) and any lower layer, never a higher one; a stage never imports another
stage (what two stages share lives below them); the core never imports a project
(``projects/`` plug in through the registries). Imports inside functions count too: a lazy
import is still a dependency, and so is ``importlib.import_module("wsod.x")`` (an f-string
``f"wsod.commands.{name}"`` depends on every module of ``wsod.commands``).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "wsod"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400

LAYERS = {
    "cli": 4, "commands": 4, "pipeline": 4, "__main__": 4,
    "stages": 3,
    "training": 2,
    "datasets": 1, "proposals": 1, "detections": 1, "models": 1, "denoise": 1, "evaluation": 1,
    "report": 1, "rescoring": 1,
    "contracts": 0, "utils": 0, "__init__": 0,
}  # fmt: skip


def _modules(package: Path = PACKAGE) -> list[tuple[str, Path]]:
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("").parts
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


def _dynamic_target(node: ast.Call) -> str | None:
    """The module an ``import_module(...)`` call names: the string, or an f-string's constant
    head followed by ``*`` (``f"wsod.commands.{x}"`` -> ``wsod.commands.*``)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return f"{arg.values[0].value}*"
    return None


def _imports(module: str, path: Path, prefix: str = "wsod") -> set[str]:
    """The ``prefix`` modules ``module`` imports (``pkg.*``: every module of ``pkg``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    pkg = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(prefix))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith(prefix):
                found.add(name)
                # `from wsod.stages import data` imports the module wsod.stages.data
                found.update(f"{name}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node)
            if target and target.startswith(prefix):
                found.add(target)
    return found


def _known(name: str, modules: set[str]) -> set[str]:
    """The modules ``name`` refers to: the longest known prefix, or for ``pkg.*`` every module
    inside ``pkg``."""
    if name.endswith("*"):
        head = name[:-1]
        return {m for m in modules if m.startswith(head) and m != head.rstrip(".")}
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return {name} if name else set()


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: the package modules it imports}`` (a package's ``__init__`` importing its own
    submodules is the package, not a dependency on them)."""
    mods = _modules(package)
    names = {m for m, _ in mods}
    return {
        m: {
            t
            for n in _imports(m, p)
            for t in _known(n, names)
            if t != m and not m.startswith(t + ".") and t != "wsod"
        }
        for m, p in mods
    }


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} imports {t}" for m, ts in graph.items() for t in ts if _layer(t) > _layer(m)
    )


def _stage_to_stage(graph: dict[str, set[str]]) -> list[str]:
    def is_stage(m: str) -> bool:
        return m.startswith("wsod.stages.")

    return sorted(
        f"{m} imports {t}" for m, ts in graph.items() if is_stage(m) for t in ts if is_stage(t)
    )


def _cycles(graph: dict[str, set[str]]) -> list[str]:
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
    return cycles


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


def test_every_module_is_short() -> None:
    long = [
        f"{m}: {n} lines"
        for m, path in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


def test_imports_point_down() -> None:
    upward = _upward(_graph())
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_stage_imports_another_stage() -> None:
    found = _stage_to_stage(_graph())
    assert not found, "stages importing stages (move what they share down):\n" + "\n".join(found)


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_core_never_imports_a_project() -> None:
    found = sorted(
        f"{m} imports {n}" for m, p in _modules() for n in _imports(m, p, prefix="projects")
    )
    assert not found, "the core importing projects/ (register through mmdet instead):\n" + (
        "\n".join(found)
    )


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(module: str, path: Path, modules: set[str], prefix: str = "wsod") -> list[str]:
    """The private names (one leading underscore) ``module`` takes from another module:
    ``from pkg.mod import _name`` and ``mod._name`` of an imported module. A name two modules
    share is part of an interface: it loses its underscore, or moves to where both read it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update((a.asname, a.name) for a in node.names if a.asname)
        elif isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            if not name.startswith(prefix) or name == module:
                continue
            for a in node.names:
                if _is_private(a.name):
                    found.append(f"{module} imports {name}.{a.name}")
                elif f"{name}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{name}.{a.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and aliases.get(node.value.id) in modules
            and aliases[node.value.id] != module
        ):
            found.append(f"{module} uses {aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


def _all_private_uses(package: Path = PACKAGE, prefix: str = "wsod") -> list[str]:
    """:func:`_private_uses` of every module of ``package`` (a project's tests and configs
    aside)."""
    mods = [(m, p) for m, p in _modules(package) if not {"tests", "configs"} & set(p.parts)]
    names = {m for m, _ in mods}
    return [f for m, p in mods for f in _private_uses(m, p, names, prefix)]


def test_no_private_name_crosses_a_module() -> None:
    found = _all_private_uses() + _all_private_uses(REPO / "projects", prefix="projects")
    assert not found, (
        "private names used outside their module (drop the underscore, or move the helper to "
        "the module both read):\n" + "\n".join(found)
    )


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "wsod" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "wsod"


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
    # a planted package: an upward import, a dynamic import closing a cycle, a stage importing a
    # stage and an import of a project
    package = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "utils/__init__.py": "",
            "utils/io.py": "def f():\n    from wsod.stages import data\n",
            "stages/__init__.py": "",
            "stages/data.py": "import importlib\nimportlib.import_module('wsod.cli')\n",
            "stages/weak.py": "from wsod.stages.data import x\n",
            "cli.py": "import importlib\n\n\ndef main(s):\n"
            "    importlib.import_module(f'wsod.stages.{s}')\n"
            "    import projects.soft_teacher\n",
        },
    )
    graph = _graph(package)
    assert graph["wsod.cli"] == {"wsod.stages.data", "wsod.stages.weak"}  # the f-string
    assert {"wsod.stages.data imports wsod.cli", "wsod.utils.io imports wsod.stages.data"} <= set(
        _upward(graph)
    )
    assert "wsod.cli -> wsod.stages.data -> wsod.cli" in _cycles(graph)
    assert _stage_to_stage(graph) == ["wsod.stages.weak imports wsod.stages.data"]
    assert _imports("wsod.cli", package / "cli.py", prefix="projects") == {"projects.soft_teacher"}
    # private names taken from another module: imported by name (absolute or relative) or read
    # off an imported module; a module's own names and dunders are its business
    private = _plant(
        tmp_path / "private",
        {
            "__init__.py": "",
            "utils/__init__.py": "",
            "utils/io.py": "def _x():\n    pass\n\n\ny = _x\n__all__ = ['y']\n",
            "utils/fmt.py": "from .io import _x, y\nfrom wsod.utils.io import __all__\n",
            "report.py": "from wsod.utils import io as m\nimport wsod.utils.io as n\n"
            "a = m._x\nb = n._x\nc = m.y\n",
        },
    )
    assert _all_private_uses(private) == [
        "wsod.report uses wsod.utils.io._x",
        "wsod.utils.fmt imports wsod.utils.io._x",
    ]
