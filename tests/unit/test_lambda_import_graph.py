"""No module a Lambda entry point can reach imports ``engram_memory.local``.

``local/`` is the one-machine service and is not shipped in the Lambda asset; a deployed
function that reached it (even through a lazy import inside a function body) would fail
with ImportModuleError on that path only. Local mode injects its adapters from its own
composition (``engram_memory.local.adapters.install``) instead.

The walk is static: every ``import``/``from ... import`` of an ``engram_memory`` module in
a file's AST, wherever it sits (module level, function bodies, ``TYPE_CHECKING`` blocks),
followed transitively from each ``functions/*/handler.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = REPO / "shared"
FUNCTIONS = REPO / "functions"
LOCAL = "engram_memory.local"


def module_file(name: str) -> Path | None:
    """The source file of an ``engram_memory`` module or package, if it exists."""
    base = PACKAGE_ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolve_relative(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    parts = current.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*parts, node.module] if node.module else parts)


def imported_modules(path: Path, current: str = "") -> set[str]:
    """Every ``engram_memory`` module the file at ``path`` imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(node, current, path.name == "__init__.py")
                    if node.level else node.module or "")
            found.add(base)
            # ``from engram_memory.x import y`` imports y too when y is a submodule.
            found.update(f"{base}.{alias.name}" for alias in node.names
                         if module_file(f"{base}.{alias.name}") is not None)
    return {name for name in found if name.split(".")[0] == "engram_memory"}


def with_parents(name: str) -> set[str]:
    """A module and every package above it (importing it runs their ``__init__``)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def reachable_from(entry: Path) -> dict[str, str]:
    """Each reachable ``engram_memory`` module, mapped to a module that imports it."""
    importer: dict[str, str] = {}
    pending = [(name, entry.relative_to(REPO).as_posix()) for name in imported_modules(entry)]
    while pending:
        name, parent = pending.pop()
        for module in sorted(with_parents(name)):
            if module in importer:
                continue
            importer[module] = parent
            path = module_file(module)
            if path is not None:
                pending.extend((child, module) for child in imported_modules(path, module))
    return importer


def chain(importer: dict[str, str], module: str) -> str:
    """``handler -> a -> b -> module``: how the entry point reaches ``module``."""
    steps = [module]
    while steps[-1] in importer:
        steps.append(importer[steps[-1]])
    return " -> ".join(reversed(steps))


ENTRY_POINTS = sorted(FUNCTIONS.glob("*/handler.py"))


def test_every_function_has_an_entry_point() -> None:
    assert len(ENTRY_POINTS) == 11


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda p: p.parent.name)
def test_no_entry_point_reaches_local_mode(entry: Path) -> None:
    importer = reachable_from(entry)
    assert "engram_memory.composition" in importer or "engram_memory.runtime" in importer
    local = sorted(m for m in importer if m == LOCAL or m.startswith(LOCAL + "."))
    assert local == [], "\n".join(chain(importer, m) for m in local)


def test_the_walk_follows_lazy_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "handler.py"
    source.write_text("def f():\n    from engram_memory.local.tokens import mint\n"
                      "    import engram_memory.local.state\n", encoding="utf-8")
    assert {"engram_memory.local.tokens", "engram_memory.local.state"} <= \
        imported_modules(source)
