"""Ports of the read path (projection, search, get): what the services need from storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from engram_memory.services.ports.write import RecordEntry

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope
    from engram_memory.domain.ranking import AnalyzedDocument, CorpusStats, Posting

PostingRef = tuple[str, int]
"""A record's posting under one term: (term, impact code); the code places it in the term."""

ACCEPTED_CURRENT = "accepted_current"
INVALIDATION_COMPLETE = "complete"


@dataclass(frozen=True, slots=True)
class RecordRow(RecordEntry):
    """The canonical record item as the read path sees it (main table, ``REC#{id}``).

    A :class:`RecordEntry` (the shape the write path reads: state, digests, parts) with
    the content and the times the read rules need: one shape for one item.
    """

    record: Mapping[str, Any] | None
    valid_t: int
    valid_t_end: int | None
    expires_at_ms: int | None
    recorded_cursor: int
    projection_invalidation: str | None = None


@dataclass(frozen=True, slots=True)
class JournalChange:
    """One journal event as the read path needs it: its cursor and the record it moved."""

    cursor: int
    record_id: str | None


class RecordReader(Protocol):
    """Canonical state in the main table, read with strong consistency."""

    def head_cursor(self, scope: Scope) -> int:
        """The scope's journal head cursor (0 when nothing was ever written)."""
        ...

    def journal_changes(self, scope: Scope, after: int, through: int) -> list[JournalChange]:
        """The scope's journal events with ``after < cursor <= through``, in cursor order."""
        ...

    def get_record(self, scope: Scope, record_id: str) -> RecordRow | None:
        """One record item of the scope, or None."""
        ...

    def get_visible_record(self, scope: Scope, record_id: str,
                           purpose: str | None) -> RecordRow | None:
        """One accepted_current record of the scope captured under ``purpose`` (None: any),
        or None. Records of another purpose or state are left out by the store itself, so
        they cost what an unknown id costs (no content read, parsed or returned)."""
        ...

    def get_records(self, scope: Scope, record_ids: Sequence[str],
                    consistent: bool = True) -> dict[str, RecordRow]:
        """Many record items of the scope by id (missing ids are absent from the result);
        ``consistent`` False: a read that may miss recent writes, at half the cost."""
        ...

    def mark_projection_complete(self, scope: Scope, record_id: str) -> None:
        """Set ``projection_invalidation = complete`` if the record item still exists."""
        ...


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """The projection's bookkeeping item for one record."""

    record_id: str
    indexed: bool
    record_digest: str
    lengths: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SearchStats:
    """What one search reads besides postings, from one item version of the stats."""

    corpus: CorpusStats
    dfs: dict[str, int]
    watermark: int
    """Every journal event with a cursor up to here has been applied to the projection."""


class ProjectionStore(Protocol):
    """The lexical index: postings per scope+term, per-record doc items, per-scope stats."""

    def stats(self, scope: Scope) -> CorpusStats:
        """N and the per-field length sums of the scope."""
        ...

    def search_stats(self, scope: Scope, terms: Sequence[str]) -> SearchStats:
        """The scope's stats, the df of each term and the watermark (one batch read)."""
        ...

    def watermark(self, scope: Scope) -> int:
        """The scope's watermark, read strongly consistent (0 when never set)."""
        ...

    def advance_watermark(self, scope: Scope, cursor: int) -> None:
        """Raise the watermark to ``cursor`` (never lowers it)."""
        ...

    def documents(self, scope: Scope, record_ids: Sequence[str]) -> dict[str, IndexedDocument]:
        """The doc items of many records (absent ids are absent from the result)."""
        ...

    def term_stats(self, scope: Scope,
                   terms: Sequence[str]) -> tuple[CorpusStats, dict[str, int]]:
        """The scope's stats and the df of each term (0 when it has no postings)."""
        ...

    def postings(self, scope: Scope, term: str, limit: int) -> Sequence[Posting]:
        """The ``limit`` highest-impact postings of ``term`` in the scope."""
        ...

    def postings_for_terms(self, scope: Scope, terms: Sequence[str],
                           limit: int) -> dict[str, Sequence[Posting]]:
        """:meth:`postings` of every term, read concurrently (one round trip, not one per term)."""
        ...

    def document(self, scope: Scope, record_id: str) -> IndexedDocument | None:
        """The doc item of a record, or None when it was never indexed."""
        ...

    def document_terms(self, scope: Scope, record_id: str) -> list[PostingRef]:
        """The postings a record wrote (its stored term list, every chunk, for removal)."""
        ...

    def completion_documents(self, scope: Scope, record_ids: Sequence[str],
                             terms: Sequence[str], consistent: bool = False
                             ) -> dict[str, AnalyzedDocument | None]:
        """Each record's frequencies of ``terms`` and its field lengths, as indexed (absent:
        no term list found; None: the stored list cannot say, complete it from content);
        ``consistent`` False: a read that may miss recent writes, at half the cost."""
        ...

    def index_at_once(self, scope: Scope, analyzed: AnalyzedDocument,
                      record_digest: str) -> bool:
        """Term list, postings (with df), doc → indexed and stats in one atomic write when
        they fit one; False when not (the caller then uses put_postings + commit_indexed)."""
        ...

    def put_postings(self, scope: Scope, analyzed: AnalyzedDocument) -> int:
        """Write one posting per term (with its df) and the term list; its chunk count."""
        ...

    def commit_indexed(self, scope: Scope, analyzed: AnalyzedDocument, record_digest: str,
                       term_chunks: int) -> bool:
        """Atomically mark the doc indexed and add it to the stats; False if already indexed."""
        ...

    def delete_postings(self, scope: Scope, record_id: str, refs: Sequence[PostingRef]) -> None:
        """Delete the record's given postings (with their df; absent ones are fine)."""
        ...

    def commit_removed(self, scope: Scope, document: IndexedDocument) -> bool:
        """Atomically mark the doc removed and subtract it from the stats; False if not indexed."""
        ...

    def delete_document_terms(self, scope: Scope, record_id: str) -> None:
        """Drop every chunk of a record's stored term list (absent ones are fine)."""
        ...
