"""Read the journal tail a search must merge: the events after the projection's watermark.

``(watermark, head]`` is read with one consistent Query on the scope's journal partition;
the records its events name are read from canonical state (consistent BatchGetItem) while
their doc items are read from the projection, at the same time. More than ``bound`` events
means the projector is down or far behind: PROJECTION_STALE (retriable), never a partial
answer. The rules and the bound's value: docs/search.md (read-your-writes).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from engram_memory.concurrency import in_background
from engram_memory.domain.errors import ProjectionStale
from engram_memory.domain.ranking import analyze
from engram_memory.domain.search_fields import record_document
from engram_memory.domain.tail_merge import CountedDocument, TailDelta
from engram_memory.services.ports.read import ACCEPTED_CURRENT

if TYPE_CHECKING:
    from collections.abc import Mapping

    from engram_memory.domain.context import Scope
    from engram_memory.domain.ranking import AnalyzedDocument
    from engram_memory.services.ports.read import (
        IndexedDocument,
        ProjectionStore,
        RecordReader,
        RecordRow,
    )

DEFAULT_TAIL_BOUND = 1000
"""Journal events a search merges at most before it answers PROJECTION_STALE."""
_READ_BATCH = 100
"""Ids per BatchGetItem (DynamoDB's maximum)."""
TAIL_READERS = 2 * DEFAULT_TAIL_BOUND // _READ_BATCH
"""Batch reads in flight at once: every record and doc batch of a tail at the bound."""



class JournalTail:
    """Reads the tail between a watermark and a pinned head into a :class:`TailDelta`."""

    def __init__(self, records: RecordReader, projection: ProjectionStore,
                 bound: int = DEFAULT_TAIL_BOUND) -> None:
        self._records = records
        self._projection = projection
        self._bound = bound

    def check(self, watermark: int, head: int) -> None:
        """PROJECTION_STALE when the tail is longer than the bound (cursors are gap-free)."""
        if head - watermark > self._bound:
            raise ProjectionStale

    def delta(self, scope: Scope, watermark: int, head: int) -> TailDelta:
        """What the events ``(watermark, head]`` change; empty when the projection is there."""
        self.check(watermark, head)
        if head <= watermark:
            return TailDelta()
        changes = self._records.journal_changes(scope, watermark, head)
        ids = list(dict.fromkeys(c.record_id for c in changes if c.record_id))
        if not ids:
            return TailDelta()
        # Every batch of both reads at once: one round trip whatever the tail's length.
        chunks = [ids[i:i + _READ_BATCH] for i in range(0, len(ids), _READ_BATCH)]
        row_futures = [in_background(partial(self._records.get_records, scope, chunk),
                                     width=TAIL_READERS) for chunk in chunks]
        document_futures = [in_background(partial(self._projection.documents, scope, chunk),
                                          width=TAIL_READERS) for chunk in chunks]
        rows: dict[str, RecordRow] = {}
        documents: dict[str, IndexedDocument] = {}
        for row_future, document_future in zip(row_futures, document_futures, strict=True):
            rows.update(row_future.result())
            documents.update(document_future.result())
        return self._classify(scope, ids, rows, documents)

    def _classify(self, scope: Scope, ids: list[str], rows: dict[str, RecordRow],
                  documents: dict[str, IndexedDocument]) -> TailDelta:
        current: list[AnalyzedDocument] = []
        uncounted: set[str] = set()
        gone: set[str] = set()
        counted_gone: list[CountedDocument] = []
        records: dict[str, Mapping[str, Any]] = {}
        for record_id in ids:
            row = rows.get(record_id)
            document = documents.get(record_id)
            counted = document is not None and document.indexed
            # The projector indexes exactly the accepted_current records (valid time and
            # expiry are read-time filters), so that is what the statistics must count.
            if row is not None and row.state == ACCEPTED_CURRENT and row.record is not None:
                current.append(analyze(record_document(record_id, row.record)))
                records[record_id] = row.record
                if not counted:
                    uncounted.add(record_id)
                continue
            gone.add(record_id)
            if document is not None and counted:
                terms = frozenset(t for t, _ in self._projection.document_terms(scope, record_id))
                counted_gone.append(CountedDocument(record_id, document.lengths, terms))
        return TailDelta(tuple(current), frozenset(uncounted), frozenset(gone),
                         tuple(counted_gone), records)
