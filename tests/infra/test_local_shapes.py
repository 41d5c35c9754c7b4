"""Local mode's tables and queue are the synthesized stack's (the generated file is fresh)."""

from __future__ import annotations

from infra.local_shapes import SHAPES_FILE, render
from tests.infra.conftest import Synthesized


def test_the_local_shapes_file_is_generated_from_the_current_template(
        synthesized: Synthesized) -> None:
    assert SHAPES_FILE.read_text(encoding="utf-8") == render(synthesized.template), (
        "stale: run `python -m infra.local_shapes` and commit "
        "shared/engram_memory/local/stack_shapes.json")
