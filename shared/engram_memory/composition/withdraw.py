"""Composition root of engram_memory_withdraw."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.composition.writes import gate
from engram_memory.services.withdraw import WithdrawService


@bootstrap.per_container
def service() -> WithdrawService:
    """The withdraw use case."""
    return WithdrawService(store=bootstrap.store(), gate=gate(), **bootstrap.common())
