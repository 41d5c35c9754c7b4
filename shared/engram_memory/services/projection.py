"""Keep the lexical projection in step with canonical record state (the projector's use case).

A stream record is only a trigger: the projector re-reads the record item (strongly
consistent) and reconciles the projection with what it finds, so replays, duplicates and
reordering converge on the same index. Only ``REC#`` items in ``accepted_current`` are
indexed; every other state (or a deleted item) removes the record's postings and then
marks ``projection_invalidation = complete`` on the record item.

Watermark: a journal event is the second trigger. :meth:`ProjectionService.catch_up`
applies every event between the scope's watermark and that event's cursor in cursor order
(reconciling each record an event names), then raises the watermark to the cursor. So the
watermark is contiguous: every event up to it has been applied, and a record whose
reconciliation keeps failing holds it back (search then merges the journal tail or answers
PROJECTION_STALE; docs/search.md).

Crash safety (at-least-once): indexing writes postings before the transaction that flips
the doc item to ``indexed`` and adds to the stats; removal deletes postings before the
transaction that flips it to ``removed`` and subtracts. Each flip is conditioned on the
previous state, so a replay repeats the idempotent writes but never the stats change.

Semantic channel (when configured): indexing puts the record's vector BEFORE the doc flip,
so an ``indexed`` doc always has its vector (a replay overwrites it); removal deletes the
vector (idempotent) before the postings, whatever the doc item says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram_memory.concurrency import in_background
from engram_memory.domain.context import Scope
from engram_memory.domain.impact import posting_codes
from engram_memory.domain.ranking import analyze
from engram_memory.domain.search_fields import record_document
from engram_memory.services.ports.read import ACCEPTED_CURRENT, INVALIDATION_COMPLETE

if TYPE_CHECKING:
    from engram_memory.services.ports.read import (
        IndexedDocument,
        ProjectionStore,
        RecordReader,
        RecordRow,
    )
    from engram_memory.services.semantic import SemanticChannel

RECORD_PREFIX = "REC#"
SCOPE_PREFIX = "SCOPE#"
JOURNAL_PREFIX = "JOURNAL#"
EVENT_PREFIX = "EV#"
CATCH_UP_PAGE = 100
"""Events applied between two watermark writes: a long catch-up never loses its progress."""


@dataclass(frozen=True, slots=True)
class RecordKey:
    """The scope and id of a main-table record item."""

    scope: Scope
    record_id: str


def record_key(pk: object, sk: object) -> RecordKey | None:
    """The record a main-table key names; None for every other item (candidates, blobs…)."""
    if not isinstance(pk, str) or not isinstance(sk, str):
        return None
    if not pk.startswith(SCOPE_PREFIX) or not sk.startswith(RECORD_PREFIX):
        return None
    parts = pk.split("#")
    record_id = sk.removeprefix(RECORD_PREFIX)
    # Record parts (REC#{id}#PART#n) carry no state of their own.
    if len(parts) != 3 or not all(parts[1:]) or not record_id or "#" in record_id:
        return None
    return RecordKey(Scope(parts[1], parts[2]), record_id)


@dataclass(frozen=True, slots=True)
class EventKey:
    """The scope and cursor of a main-table journal event item."""

    scope: Scope
    cursor: int


def event_key(pk: object, sk: object) -> EventKey | None:
    """The journal event a main-table key names; None for every other item (the head…)."""
    if not isinstance(pk, str) or not isinstance(sk, str):
        return None
    if not pk.startswith(JOURNAL_PREFIX) or not sk.startswith(EVENT_PREFIX):
        return None
    parts = pk.split("#")
    digits = sk.removeprefix(EVENT_PREFIX)
    if len(parts) != 3 or not all(parts[1:]) or not digits.isdigit():
        return None
    return EventKey(Scope(parts[1], parts[2]), int(digits))


def records_in_images(images: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Record JSON carried by stream images (used only to find orphan postings to delete)."""
    found: list[Mapping[str, Any]] = []
    for image in images:
        text = image.get("record_json")
        if isinstance(text, str) and not image.get("record_parts"):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, Mapping):
                found.append(value)
    return found


@dataclass
class ScopeWork:
    """What one stream batch asks of one scope: its last journal event (0: none), the
    records its record items name (with the records their images carry), and the stream
    records that asked."""

    through: int = 0
    records: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    sequence_numbers: list[str] = field(default_factory=list)


@dataclass
class StreamBatch:
    """A stream batch grouped by scope (the projector's batch pass)."""

    scopes: dict[Scope, ScopeWork] = field(default_factory=dict)

    def add(self, sequence_number: str, pk: object, sk: object,
            images: Callable[[], list[Mapping[str, Any]]]) -> None:
        """One stream record; ``images`` is called only for a record item's key."""
        journal = event_key(pk, sk)
        key = record_key(pk, sk)
        if journal is not None:
            work = self.scopes.setdefault(journal.scope, ScopeWork())
            work.through = max(work.through, journal.cursor)
        elif key is not None:
            work = self.scopes.setdefault(key.scope, ScopeWork())
            work.records.setdefault(key.record_id, []).extend(records_in_images(images()))
        else:
            return
        work.sequence_numbers.append(sequence_number)


def _indexed(document: IndexedDocument | None) -> bool:
    return document is not None and document.indexed


class ProjectionService:
    """Index or unindex one record so the projection matches canonical state."""

    def __init__(self, records: RecordReader, projection: ProjectionStore,
                 semantic: SemanticChannel | None = None) -> None:
        self._records = records
        self._projection = projection
        self._semantic = semantic

    def reconcile(self, key: RecordKey,
                  image_records: Iterable[Mapping[str, Any]] = ()) -> None:
        """Bring the projection of one record in line with its current canonical state."""
        row = self._records.get_record(key.scope, key.record_id)
        document = self._projection.document(key.scope, key.record_id)
        self._settle(key, row, document, list(image_records))

    def reconcile_many(self, scope: Scope, record_ids: Iterable[str],
                       image_records: Mapping[str, list[Mapping[str, Any]]] | None = None
                       ) -> None:
        """:meth:`reconcile` of many records; their record and doc items are read in two
        batched reads at once instead of two reads per record (a burst's catch-up)."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return
        rows_future = in_background(lambda: self._records.get_records(scope, ids))
        documents = self._projection.documents(scope, ids)
        rows = rows_future.result()
        hints = image_records or {}
        embedded = self._embed_unindexed(scope, ids, rows, documents)
        for record_id in ids:
            self._settle(RecordKey(scope, record_id), rows.get(record_id),
                         documents.get(record_id), list(hints.get(record_id, ())),
                         vector_written=record_id in embedded)

    def _embed_unindexed(self, scope: Scope, ids: list[str], rows: Mapping[str, RecordRow],
                         documents: Mapping[str, IndexedDocument]) -> set[str]:
        """Put the vectors of the records :meth:`_settle` will index, their texts embedded
        in one embedder call (the vectors equal those put one at a time); their ids."""
        if self._semantic is None:
            return set()
        batch = [(scope, record_id, row.record) for record_id in ids
                 if (row := rows.get(record_id)) is not None and row.record is not None
                 and row.state == ACCEPTED_CURRENT
                 and not _indexed(documents.get(record_id))]
        if batch:
            self._semantic.index_records(batch)
        return {record_id for _, record_id, _ in batch}

    def catch_up(self, scope: Scope, through: int, settled: set[str] | None = None) -> None:
        """Apply every journal event up to ``through`` not yet applied; raise the watermark.

        Pages of :data:`CATCH_UP_PAGE` events, the watermark written after each page; an
        error leaves the watermark at the last whole page and propagates (the stream retries).
        ``settled``: records already reconciled in this invocation, after every event up to
        ``through`` was committed (reconciliation reads the current state, so once is
        enough); the records this call reconciles are added to it.
        """
        done = settled if settled is not None else set()
        mark = self._projection.watermark(scope)
        while mark < through:
            last = min(through, mark + CATCH_UP_PAGE)
            changes = self._records.journal_changes(scope, mark, last)
            # Reconciliation reads the current state, so once per record suffices.
            pending = [c.record_id for c in changes if c.record_id and c.record_id not in done]
            self.reconcile_many(scope, pending)
            done.update(pending)
            self._projection.advance_watermark(scope, last)
            mark = last

    def apply_batch(self, scope: Scope, through: int,
                    image_records: Mapping[str, list[Mapping[str, Any]]]) -> None:
        """One stream batch's work for one scope: the records its record items name
        (``image_records``: id → records carried by the images), then the journal up to its
        last event ``through`` (0: none), each record reconciled once."""
        self.reconcile_many(scope, list(image_records), image_records)
        if through > 0:
            self.catch_up(scope, through, set(image_records))

    def catch_up_to_head(self, scope: Scope) -> None:
        """:meth:`catch_up` to the scope's current journal head (a projection saved before
        watermarks existed, or rebuilt empty, replays the whole journal this way)."""
        self.catch_up(scope, self._records.head_cursor(scope))

    def _settle(self, key: RecordKey, row: RecordRow | None, document: IndexedDocument | None,
                hints: list[Mapping[str, Any]], *, vector_written: bool = False) -> None:
        """Index or remove one record given its record item and doc item, read just now
        (``vector_written``: its vector was put by the batch's one embedder call)."""
        if row is not None and row.state == ACCEPTED_CURRENT and row.record is not None:
            if not _indexed(document):
                self._index(key, row, row.record, vector_written=vector_written)
            return
        if row is not None and row.record is not None:
            hints.append(row.record)
        self._remove(key, hints, document)
        if row is not None and row.projection_invalidation != INVALIDATION_COMPLETE:
            self._records.mark_projection_complete(key.scope, key.record_id)

    def _index(self, key: RecordKey, row: RecordRow, record: Mapping[str, Any], *,
               vector_written: bool = False) -> None:
        analyzed = analyze(record_document(key.record_id, record))
        if self._semantic is not None and not vector_written:
            self._semantic.index_record(key.scope, key.record_id, record)
        if self._projection.index_at_once(key.scope, analyzed, row.record_digest):
            return
        chunks = self._projection.put_postings(key.scope, analyzed)
        self._projection.commit_indexed(key.scope, analyzed, row.record_digest, chunks)

    def _remove(self, key: RecordKey, hints: list[Mapping[str, Any]],
                document: IndexedDocument | None) -> None:
        if self._semantic is not None:
            self._semantic.remove(key.scope, key.record_id)
        if document is None:
            # Never committed; a crashed indexing attempt may still have left postings. Their
            # impact codes depend on the record alone, so they are recomputed exactly.
            refs = {
                ref
                for record in hints
                for ref in posting_codes(analyze(record_document(key.record_id, record))).items()
            }
            if refs:
                self._projection.delete_postings(key.scope, key.record_id, sorted(refs))
            # ... and its term list (frequencies of content being forgotten).
            self._projection.delete_document_terms(key.scope, key.record_id)
            return
        if document.indexed:
            terms_list = self._projection.document_terms(key.scope, key.record_id)
            self._projection.delete_postings(key.scope, key.record_id, terms_list)
            self._projection.commit_removed(key.scope, document)
        self._projection.delete_document_terms(key.scope, key.record_id)
