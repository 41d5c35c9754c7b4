"""Complete the scores of a budgeted search's best candidates from canonical state.

The pure rules are domain/completion.py. Here: the best ``completion_cap`` candidates by
partial score are read from the main table (BatchGetItem, 100 ids each, all batches at once:
one round trip), the ones lacking a posting under an open term are analyzed from their
content as the projector analyzes it, and the ranking is scored again. Nothing is read when
no term is open (the scores are already exact).

The reads are **eventually consistent** (half the read units of a consistent read): a
record's content never changes under its id (the id is the digest of the record), so a
stale read can only miss a record or show an older state. The candidates a read shows
missing or not ``accepted_current`` are read again, consistently (one more round trip,
only then), so the ranking is the one consistent reads give. Completion scores only the
records it reads as ``accepted_current`` with content; every other candidate keeps its
partial score, and revalidation's own consistent reads decide what is eligible (the rows
read here are never handed to it).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from engram_memory.concurrency import in_background
from engram_memory.domain.completion import complete, lacking, open_terms, to_complete
from engram_memory.domain.ranking import analyze, score_postings
from engram_memory.domain.search_fields import record_document
from engram_memory.services.ports.read import ACCEPTED_CURRENT

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from engram_memory.domain.context import Scope
    from engram_memory.domain.ranking import AnalyzedDocument, Posting, RankingConfig, ScoredRecord
    from engram_memory.domain.tail_merge import MergedView
    from engram_memory.services.ports.read import RecordReader, RecordRow

_READ_BATCH = 100
"""Ids per BatchGetItem (DynamoDB's maximum)."""
COMPLETION_READERS = 8
"""Batch reads in flight at once (a cap of 800 candidates in one round trip)."""


class ScoreCompletion:
    """Ranks the merged view of a search, its best candidates with exact scores."""

    def __init__(self, records: RecordReader, config: RankingConfig) -> None:
        self._records = records
        self._config = config

    def rank(self, scope: Scope, terms: Sequence[str], view: MergedView,
             read: Mapping[str, Sequence[Posting]], limit: int) -> list[ScoredRecord]:
        """The ranking, its best candidates' scores completed.

        ``read`` is what the projection returned for each term with ``limit`` postings
        asked (before the journal tail was merged): a term is open when either list is full.
        """
        ranked = score_postings(terms, view.postings, view.stats, self._config, view.dfs)
        open_ = open_terms(terms, read, limit) | open_terms(terms, view.postings, limit)
        if not open_ or not ranked or self._config.completion_cap == 0:
            return ranked
        chosen = lacking(to_complete(ranked, self._config.completion_cap), view.postings,
                         open_)
        rows = self._read(scope, chosen, consistent=False)
        # A stale read can miss a record just accepted (or show it pending): those few are
        # read again, consistently, so the ranking never depends on how stale a read was
        # (a later page computes the same ranking, or paging would answer STALE_PAGE).
        unsure = [rid for rid in chosen if rid not in rows or rows[rid].state != ACCEPTED_CURRENT]
        if unsure:
            rows.update(self._read(scope, unsure, consistent=True))
        documents: dict[str, AnalyzedDocument] = {}
        for record_id in chosen:
            row = rows.get(record_id)
            if row is not None and row.state == ACCEPTED_CURRENT and row.record is not None:
                documents[record_id] = analyze(record_document(record_id, row.record))
        if not documents:
            return ranked
        return complete(ranked, terms, view.postings, view.stats, view.dfs, documents,
                        self._config)

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
