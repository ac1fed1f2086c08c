"""An architecture rule import-linter cannot express (its contracts are in pyproject.toml):
no package imports another package's `_private` names."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _package(module: str) -> str:
    """The first-level package of a hatkit module (hatkit.judge.llm -> hatkit.judge)."""
    return ".".join(module.split(".")[:2])


def _imports(path: Path) -> list[tuple[str, str, int]]:
    """(module imported from, name, line) of every `from X import name` in a source file."""
    module = ".".join(path.relative_to(SRC).with_suffix("").parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = module.split(".")
            if node.level:
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out += [(source, a.name, node.lineno) for a in node.names]
    return out


def test_no_package_imports_another_packages_private_names() -> None:
    bad = []
    for path in sorted((SRC / "hatkit").rglob("*.py")):
        here = _package(".".join(path.relative_to(SRC).with_suffix("").parts))
        for source, name, line in _imports(path):
            if (source.startswith("hatkit.") and name.startswith("_") and not name.startswith("__")
                    and _package(source) != here):
                bad.append(f"{path.relative_to(SRC)}:{line}: {name} from {source}")
    assert not bad, "private names imported across packages:\n" + "\n".join(bad)


def test_the_checker_resolves_relative_imports() -> None:
    """The rule above would pass vacuously if `_imports` missed relative imports."""
    pkg = SRC / "hatkit" / "judge" / "llm.py"
    found = {(s, n) for s, n, _ in _imports(pkg)}
    assert ("hatkit.agent.loop", "Episode") in found and ("hatkit.judge.verdict", "Verdict") in found
