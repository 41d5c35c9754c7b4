"""One mutation flow in one place (issue 34 item 2): walking a mutation enters each room once.

``services/pipeline.py`` holds the whole attempt, top to bottom, with every step it takes
(replay, the approval before state, the fenced commit, the rereads, their retry bounds);
what it calls outside itself is the domain's rules, the ports, and the hooks of the use case
it runs (``reads``, ``check``, ``decide``, the build on a head). Read two ways:

- statically (stdlib ``ast``): the pipeline imports no sibling service module but the ports,
  and the steps other writers share (expiry, reapply-forgets) are defined there and only
  there;
- by walking a capture and a forget on the in-memory adapters with a profile hook: the
  service modules the pipeline itself calls are the use case's own, every other service
  module is entered at most once, and ``MutationPipeline``'s methods are defined in the
  order an attempt first reaches them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from engram_memory.domain.context import Tool

from tests.unit.services.memory_world import MemoryWorld, forget_args

SERVICES = Path(__file__).resolve().parents[2] / "shared" / "engram_memory" / "services"
PIPELINE = SERVICES / "pipeline.py"
PIPELINE_MODULE = "engram_memory.services.pipeline"
SHARED_STEPS = frozenset({"replayed", "stored_result", "commit_fenced", "with_rereads",
                          "Backoff", "RetryPolicy"})
"""The steps the flow takes that other writers take too: one definition, in the pipeline."""
TEXT = "The ingest queue retries three times with exponential backoff."


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports_from(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(module, name) of every ``from engram_memory... import name`` anywhere in ``tree``,
    and (module, "") of every ``import engram_memory...``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield from ((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names)


def test_the_pipeline_takes_none_of_its_steps_from_another_service_module() -> None:
    siblings = sorted({module for module, _ in _imports_from(_tree(PIPELINE))
                       if module.startswith("engram_memory.services.")
                       and not module.startswith("engram_memory.services.ports.")})
    assert siblings == [], f"services/pipeline.py enters {siblings} for its steps"


def test_the_steps_other_writers_share_are_defined_in_the_pipeline_only() -> None:
    pipeline_defines = {node.name for node in _tree(PIPELINE).body
                        if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert pipeline_defines >= SHARED_STEPS
    for path in sorted(SERVICES.rglob("*.py")):
        if path == PIPELINE:
            continue
        tree = _tree(path)
        defined = {node.name for node in tree.body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)} & SHARED_STEPS
        assert not defined, f"{path.name} defines {sorted(defined)} beside the pipeline"
        elsewhere = {(module, name) for module, name in _imports_from(tree)
                     if name in SHARED_STEPS and module != PIPELINE_MODULE}
        assert not elsewhere, f"{path.name} takes {sorted(elsewhere)} from elsewhere"


@dataclass
class Walk:
    """What one mutation entered, service module by service module (the ports aside)."""

    visits: list[str] = field(default_factory=list)  # consecutive calls in one module: one
    called_by_pipeline: set[str] = field(default_factory=set)
    pipeline_methods: list[str] = field(default_factory=list)  # first calls, in order


def _service_module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(SERVICES) or path.is_relative_to(SERVICES / "ports"):
        return None
    return ".".join(path.relative_to(SERVICES).with_suffix("").parts)


@contextmanager
def walking() -> Iterator[Walk]:
    """Record the service modules entered by the calls made inside the block."""
    walk = Walk()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        module = _service_module(frame)
        if module is None:
            return
        if not walk.visits or walk.visits[-1] != module:
            walk.visits.append(module)
        if module != "pipeline" and _service_module(frame.f_back) == "pipeline":
            walk.called_by_pipeline.add(module)
        name = frame.f_code.co_qualname
        if (module == "pipeline" and name.startswith("MutationPipeline.")
                and "<locals>" not in name and name not in walk.pipeline_methods):
            walk.pipeline_methods.append(name)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield walk
    finally:
        sys.setprofile(previous)


def _capture(world: MemoryWorld) -> Callable[[], Any]:
    return lambda: world.capture(TEXT)


def _forget(world: MemoryWorld) -> Callable[[], Any]:
    record_id = world.admit(world.capture(TEXT))["record_id"]
    args = forget_args(record_id)
    ref = world.approve(Tool.FORGET, args, "ref-forget")
    return lambda: world.call(Tool.FORGET, args, confirmation_ref=ref)


# The use case's own modules: its Mutation (and what its hooks build) lives there.
WALKS = {
    "capture": (_capture, frozenset({"capture"})),
    "forget": (_forget, frozenset({"transitions", "forget", "forget_ledger"})),
}


def _walk(name: str) -> tuple[Walk, frozenset[str]]:
    arrange, use_case = WALKS[name]
    mutation = arrange(MemoryWorld())
    with walking() as walk:
        mutation()
    return walk, use_case


@pytest.mark.parametrize("name", sorted(WALKS))
def test_from_the_pipeline_a_mutation_enters_only_its_use_case(name: str) -> None:
    walk, use_case = _walk(name)
    assert "pipeline" in walk.visits
    assert walk.called_by_pipeline <= use_case, " → ".join(walk.visits)


@pytest.mark.parametrize("name", sorted(WALKS))
def test_a_mutation_enters_every_other_service_module_once(name: str) -> None:
    walk, use_case = _walk(name)
    others = [module for module in walk.visits if module not in use_case | {"pipeline"}]
    assert len(others) == len(set(others)), " → ".join(walk.visits)


def test_the_pipeline_reads_in_the_order_an_attempt_runs() -> None:
    class_body = next(node for node in _tree(PIPELINE).body
                      if isinstance(node, ast.ClassDef) and node.name == "MutationPipeline")
    defined = [f"MutationPipeline.{node.name}" for node in class_body.body
               if isinstance(node, ast.FunctionDef)]
    for name in WALKS:
        reached = _walk(name)[0].pipeline_methods
        assert reached == [method for method in defined if method in reached], name
