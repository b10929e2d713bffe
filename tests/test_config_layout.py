"""The configs' shape: a config inherits from ``configs/_base_/`` plus at most one level, as
mmdetection's model-zoo configs do, so every value is found in at most three files (the config,
the config it varies, the ``_base_`` pieces). The chains are read from the files' ``_base_``
assignments (``ast``, nothing imported)."""

from __future__ import annotations

import ast
from pathlib import Path

from mmengine.config import Config

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
MAX_LEVELS = 1  # configs between a config and configs/_base_/


def _bases(path: Path) -> list[Path]:
    """The files ``path``'s top-level ``_base_`` names, resolved against its folder (``mmdet::``
    bases live in mmdet's package and are left out)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_base_" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            names = [value] if isinstance(value, str) else list(value)
            return [(path.parent / n).resolve() for n in names if "::" not in n]
    return []


def _is_base(path: Path, root: Path) -> bool:
    return (root / "_base_").resolve() in path.resolve().parents


def levels(path: Path, root: Path = CONFIGS) -> int:
    """How many configs outside ``root/_base_/`` lie on the longest ``_base_`` chain above
    ``path`` (0: it inherits ``_base_/`` files only)."""
    return max((0 if _is_base(b, root) else 1 + levels(b, root) for b in _bases(path)), default=0)


def too_deep(root: Path = CONFIGS) -> list[str]:
    """The configs under ``root`` (``_base_/`` aside) more than :data:`MAX_LEVELS` above
    ``_base_/``, and the ``_base_/`` files that inherit a config outside ``_base_/``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if _is_base(path, root):
            outside = [str(b) for b in _bases(path) if not _is_base(b, root)]
            if outside:
                out.append(f"{rel}: a _base_ file inheriting {', '.join(outside)}")
        elif (n := levels(path, root)) > MAX_LEVELS:
            out.append(f"{rel}: {n} configs above _base_/ (at most {MAX_LEVELS})")
    return out


def test_configs_are_at_most_one_level_above_base() -> None:
    found = too_deep()
    assert not found, (
        "configs deeper than _base_/ plus one level (move what they share into configs/_base_/, "
        "inherit _base_/ directly):\n" + "\n".join(found)
    )


def _pipeline_configs() -> set[Path]:
    out = set()
    for pipeline in sorted((REPO / "pipelines").glob("*.py")):
        values = Config.fromfile(str(pipeline)).to_dict()
        named = [(values.get(s) or {}).get("config") for s in ("weak", "strong")]
        out.update(REPO / c for c in [*named, values.get("fsd_config")] if c)
    return out


def test_every_pipeline_config_is_checked_above() -> None:
    """The configs the shipped pipelines name live in configs/ (so the check above covers them),
    and each is at most one level above _base_/."""
    used = _pipeline_configs()
    assert used, "no configs found in pipelines/"
    for path in used:
        assert CONFIGS in path.parents, f"{path}: a shipped pipeline's config outside configs/"
        assert levels(path) <= MAX_LEVELS, f"{path}: {levels(path)} levels above _base_/"


def test_the_check_can_fail(tmp_path: Path) -> None:
    """A planted chain: _base_ <- one <- two <- three, and a _base_ file inheriting a config."""
    files = {
        "_base_/model.py": "x = 1\n",
        "_base_/bad.py": "_base_ = '../m/one.py'\n",
        "m/one.py": "_base_ = ['../_base_/model.py', 'mmdet::_base_/default_runtime.py']\n",
        "m/two.py": "_base_ = './one.py'\n",
        "m/three.py": "_base_ = ['./two.py']\ny = 2\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert [levels(tmp_path / f"m/{n}.py", tmp_path) for n in ("one", "two", "three")] == [0, 1, 2]
    found = too_deep(tmp_path)
    assert found == [
        f"_base_/bad.py: a _base_ file inheriting {(tmp_path / 'm/one.py').resolve()}",
        "m/three.py: 2 configs above _base_/ (at most 1)",
    ]
