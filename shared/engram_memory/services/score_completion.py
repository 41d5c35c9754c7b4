"""Complete the scores of a budgeted search's best candidates.

The pure rules are domain/completion.py. Here: of the best ``completion_cap`` candidates by
partial score, the ones lacking a posting under an open term are read, and the ranking is
scored again. Nothing is read when no term is open (the scores are already exact).

A candidate is read from the projection's term list of it (one small item: the query
terms' per-field frequencies and the field lengths, exactly what the projector indexed; no
record item parsed, no content analyzed). The journal tail's current records are completed
from the tail's own read (no read). The few the projection cannot complete (term lists
written before frequencies were stored, or of several chunks) are read from the main table
and analyzed from their content as the projector analyzes it.
All reads of a kind go out at once (BatchGetItem, 100 ids each: one round trip).

The reads are **eventually consistent** (half the read units of a consistent read): a
record's content never changes under its id (the id is the digest of the record), so a
stale read can only miss an item or show an older state. What a read shows missing (or, in
the main table, not ``accepted_current``) is read again, consistently (one more round
trip, only then), so the ranking is the one consistent reads give. Completed scores only
order candidates: revalidation's own consistent reads decide what is eligible (no row read
here is handed to it).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from engram_memory.concurrency import in_background
from engram_memory.domain.completion import complete, lacking, open_terms, to_complete
from engram_memory.domain.ranking import analyze, order, score_map
from engram_memory.domain.search_fields import record_document
from engram_memory.services.ports.read import ACCEPTED_CURRENT

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from engram_memory.domain.context import Scope
    from engram_memory.domain.ranking import AnalyzedDocument, Posting, RankingConfig, ScoredRecord
    from engram_memory.domain.tail_merge import MergedView
    from engram_memory.services.ports.read import ProjectionStore, RecordReader, RecordRow

_READ_BATCH = 100
"""Ids per BatchGetItem (DynamoDB's maximum)."""
COMPLETION_READERS = 8
"""Batch reads in flight at once (a cap of 800 candidates in one round trip)."""


class ScoreCompletion:
    """Ranks the merged view of a search, its best candidates with exact scores."""

    def __init__(self, records: RecordReader, config: RankingConfig) -> None:
        self._records = records
        self._config = config

    def rank(self, projection: ProjectionStore, scope: Scope, terms: Sequence[str],
             view: MergedView, read: Mapping[str, Sequence[Posting]],
             limit: int, tail: Sequence[AnalyzedDocument] = ()) -> Sequence[ScoredRecord]:
        """The ranking, its best candidates' scores completed.

        ``read`` is what ``projection`` returned for each term with ``limit`` postings
        asked (before the journal tail was merged): a term is open when either list is full.
        ``tail``: the journal tail's current records, already read and analyzed (completed
        from those, with no read: the projection may not hold them yet).
        """
        # Scores first, ordered once: completion re-orders after changing some of them.
        scores = score_map(terms, view.postings, view.stats, self._config, view.dfs)
        open_ = open_terms(terms, read, limit) | open_terms(terms, view.postings, limit)
        if not open_ or not scores or self._config.completion_cap == 0:
            return order(scores)
        chosen = lacking(to_complete(scores, self._config.completion_cap), view.postings,
                         open_)
        known = {doc.record_id: doc for doc in tail}
        documents = {rid: known[rid] for rid in chosen if rid in known}
        documents.update(self._from_projection(
            projection, scope, [rid for rid in chosen if rid not in known], terms))
        rest = [rid for rid in chosen if rid not in documents]
        if rest:
            documents.update(self._from_content(scope, rest))
        if not documents:
            return order(scores)
        return complete(scores, terms, view.postings, view.stats, view.dfs, documents,
                        self._config)

    @staticmethod
    def _from_projection(projection: ProjectionStore, scope: Scope, chosen: list[str],
                         terms: Sequence[str]) -> dict[str, AnalyzedDocument]:
        """The candidates the projection's term lists can complete. A stale read can miss
        a list just written: the ones it misses are read again, consistently, so the
        ranking never depends on how stale a read was (a later page computes the same
        ranking, or paging would answer STALE_PAGE)."""
        if not chosen:
            return {}
        found = projection.completion_documents(scope, chosen, terms, consistent=False)
        missed = [rid for rid in chosen if rid not in found]
        if missed:
            found.update(projection.completion_documents(scope, missed, terms, consistent=True))
        return {rid: doc for rid, doc in found.items() if doc is not None}

    def _from_content(self, scope: Scope, chosen: list[str]) -> dict[str, AnalyzedDocument]:
        """The candidates completed from their canonical content (analyzed as the projector
        analyzes it): term lists written before frequencies were stored, or of several
        chunks, and records neither projected nor in the tail read (removed ones: they stay
        partial). Only ``accepted_current`` records."""
        rows = self._read(scope, chosen, consistent=False)
        unsure = [rid for rid in chosen if rid not in rows or rows[rid].state != ACCEPTED_CURRENT]
        if unsure:
            rows.update(self._read(scope, unsure, consistent=True))
        documents: dict[str, AnalyzedDocument] = {}
        for record_id in chosen:
            row = rows.get(record_id)
            if row is not None and row.state == ACCEPTED_CURRENT and row.record is not None:
                documents[record_id] = analyze(record_document(record_id, row.record))
        return documents

    def _read(self, scope: Scope, record_ids: list[str],
              consistent: bool) -> dict[str, RecordRow]:
        chunks = [record_ids[i:i + _READ_BATCH] for i in range(0, len(record_ids), _READ_BATCH)]
        futures = [in_background(partial(self._records.get_records, scope, chunk,
                                         consistent=consistent),
                                 width=COMPLETION_READERS) for chunk in chunks]
        rows: dict[str, RecordRow] = {}
        for future in futures:
            rows.update(future.result())
        return rows
