"""Rebuild the lexical projection from canonical state (a new tokenizer or impact key).

The projection's keys name its generation (``ranking.PROJECTION_GENERATION``), so code with
a new tokenizer starts from an empty index, with no watermark, and never reads postings the
old tokenizer wrote. This use case fills it: for every scope, the projector's own journal
catch-up (:meth:`ProjectionService.catch_up_to_head`) replays the journal from the new
generation's watermark (0) to the head, reconciling every record an event names and raising
the watermark page by page. Reconciliation is idempotent and the watermark contiguous, so a
rebuild is safe beside a running projector and resumes where it stopped. Entry points:
``engram-memory reindex`` (deployed tables, with operator credentials) and the local
service's start after a ``--data-dir`` snapshot of another generation (docs/search.md,
"Generations and rebuilds").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope
    from engram_memory.services.projection import ProjectionService


class ScopeSource(Protocol):
    """Every scope of canonical state."""

    def scopes(self) -> Iterator[Scope]:
        """Each scope that has a journal, in any order."""
        ...


class ProjectionRebuild:
    """Bring every scope's projection of the current generation up to its journal head."""

    def __init__(self, scopes: ScopeSource, projection: ProjectionService) -> None:
        self._scopes = scopes
        self._projection = projection

    def run(self) -> list[str]:
        """The scope keys (``{tenant}#{workspace}``) brought up to their head."""
        done = []
        for scope in self._scopes.scopes():
            self._projection.catch_up_to_head(scope)
            done.append(scope.key)
        return done
