"""Composition root of the retention expiry sweeper (docs/expiry.md)."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.services.expiry import ExpirySweeper


@bootstrap.per_container
def service() -> ExpirySweeper:
    """The sweeper use case."""
    return ExpirySweeper(store=bootstrap.store(), **bootstrap.common())
