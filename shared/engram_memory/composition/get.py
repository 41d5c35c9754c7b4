"""Composition root of engram_memory_get."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.composition.reads import record_reader
from engram_memory.services.get import GetService
from engram_memory.services.redaction import Redactor


@bootstrap.per_container
def service() -> GetService:
    """The get use case."""
    s = bootstrap.settings()
    return GetService(record_reader(), bootstrap.clock(), Redactor(s.redaction_allowlist),
                      purpose_scope=s.purpose_scope)
