"""The import rules of the layout, read statically from the source (stdlib ``ast``).

- Nothing outside ``engram_memory/local/`` imports ``engram_memory.local`` except
  ``engram_memory/cli/serve.py``, the one command that starts the embedded service
  (docs/map.md). The deployed-stack tools (``reproject``, ``cli/reindex``, ``cli/smoke``, …)
  get local mode's adapters injected (``bootstrap.provide``), never by importing it.
- Neither ``shared/`` nor ``infra/`` holds an import circle. Every import counts, wherever
  it sits (module level, function bodies, ``TYPE_CHECKING`` blocks): a circle hidden behind
  a lazy or type-only import still makes two modules that cannot be read one before the
  other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCAL = "engram_memory.local"
LOCAL_IMPORT_ALLOWED = frozenset({"engram_memory.cli.serve"})
"""Modules outside ``local/`` that may import it: the command that starts the service."""

ROOTS: Mapping[str, Path] = {"engram_memory": REPO / "shared" / "engram_memory",
                             "infra": REPO / "infra"}


def module_name(root: str, path: Path) -> str:
    """The dotted module name of ``path`` under the package directory of ``root``."""
    parts = path.relative_to(ROOTS[root]).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((root, *parts))


def source_modules(root: str) -> dict[str, Path]:
    """Every module of package ``root``, by dotted name."""
    return {module_name(root, path): path for path in sorted(ROOTS[root].rglob("*.py"))
            if "cdk.out" not in path.parts}


def _absolute(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = current.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join([*parts[:keep], *([node.module] if node.module else [])])


def imports_of(path: Path, current: str, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``known`` the file imports, anywhere in it (``from p import m``
    counts submodule ``p.m`` when it is one, else module ``p``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, current, path.name == "__init__.py")
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(base)
    return {name for name in found if name in known and name != current}


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports among ``modules``."""
    return {name: imports_of(path, name, modules) for name, path in modules.items()}


def _cycle_from(start: str, graph: Mapping[str, set[str]], done: set[str]) -> list[str] | None:
    """Depth-first from ``start`` (iterative); modules fully explored join ``done``."""
    path = [start]
    stack: list[Iterator[str]] = [iter(sorted(graph[start]))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            done.add(path.pop())
        elif child in path:
            return [*path[path.index(child):], child]
        elif child not in done:
            path.append(child)
            stack.append(iter(sorted(graph[child])))
    return None


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle as ``[a, b, …, a]``, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            cycle = _cycle_from(start, graph, done)
            if cycle is not None:
                return cycle
    return None


def _is_local(name: str) -> bool:
    return name == LOCAL or name.startswith(LOCAL + ".")


def test_nothing_outside_local_imports_local_mode() -> None:
    modules = source_modules("engram_memory")
    offenders = sorted(
        f"{name} imports {imported}"
        for name, imported_set in import_graph(modules).items()
        if not _is_local(name) and name not in LOCAL_IMPORT_ALLOWED
        for imported in imported_set if _is_local(imported))
    assert offenders == [], "\n".join(offenders)


def test_the_allowed_importer_exists() -> None:
    assert source_modules("engram_memory").keys() >= LOCAL_IMPORT_ALLOWED


@pytest.mark.parametrize("root", sorted(ROOTS))
def test_no_import_circle(root: str) -> None:
    cycle = find_cycle(import_graph(source_modules(root)))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def _package(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Path]:
    modules = {}
    for name, text in files.items():
        path = tmp_path.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        modules[name] = path
    return modules


def test_a_circle_through_a_type_only_import_is_named(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "pkg.a": "from pkg.b import B\n",
        "pkg.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from pkg import c\n",
        "pkg.c": "def f():\n    from pkg.a import A\n",
        "pkg.d": "import pkg.a\n",
    })
    assert find_cycle(import_graph(modules)) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]


def test_a_tree_of_imports_has_no_circle(tmp_path: Path) -> None:
    modules = _package(tmp_path, {"pkg.a": "from pkg import b, c\n", "pkg.b": "import pkg.c\n",
                                  "pkg.c": "import os\n"})
    assert find_cycle(import_graph(modules)) is None


def test_a_relative_import_resolves_to_its_module(tmp_path: Path) -> None:
    modules = _package(tmp_path, {"pkg.sub.a": "from .b import x\nfrom .. import top\n",
                                  "pkg.sub.b": "", "pkg.top": ""})
    assert imports_of(modules["pkg.sub.a"], "pkg.sub.a", modules) == {"pkg.sub.b", "pkg.top"}
