"""Composition root of engram_memory_forget."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.composition.writes import gate
from engram_memory.services.forget import ForgetService


@bootstrap.per_container
def service() -> ForgetService:
    """The forget use case."""
    return ForgetService(store=bootstrap.store(), gate=gate(), **bootstrap.common())
