"""Merge the journal tail into what a search read from the projection (read-your-writes).

The projection has applied every journal event up to its watermark; the events after it
(the tail, up to the pinned head) may not be applied yet. Search reads the records those
events name from canonical state and this module turns the projection's view into the
view the projection will have once it has applied them:

* **current** records (``accepted_current`` now) get their postings from their own
  content, exactly as the projector would write them, and replace any posting read;
* records that are no longer current lose every posting read;
* the statistics (N, field length sums, each query term's df) gain the current records
  the projection does not count yet and lose the records it still counts but will drop;
* each term keeps its best ``k`` postings in stored-key order (domain/impact.py).

With the projection quiescent, the result is the very postings and statistics search will
read after the drain, so the scores are identical (tested); docs/search.md says where it
can differ (a term with df > k whose top k loses a posting to a removal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram_memory.domain.impact import impact_code, top_postings
from engram_memory.domain.posting_columns import PostingColumns
from engram_memory.domain.ranking import AnalyzedDocument, CorpusStats, Posting


@dataclass(frozen=True, slots=True)
class CountedDocument:
    """A document the projection counts in its statistics: its lengths and terms."""

    record_id: str
    lengths: tuple[int, ...]
    terms: frozenset[str]


@dataclass(frozen=True, slots=True)
class TailDelta:
    """What the journal tail changes, read from canonical state and the doc items."""

    current: tuple[AnalyzedDocument, ...] = ()
    """Tail records that are accepted_current now, analyzed from their content."""
    uncounted: frozenset[str] = frozenset()
    """Ids among ``current`` the projection's statistics do not count yet."""
    gone: frozenset[str] = frozenset()
    """Tail records that are no longer current (none of their postings may be used)."""
    counted_gone: tuple[CountedDocument, ...] = field(default=())
    """Records among ``gone`` the projection's statistics still count."""
    records: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The record (JSON mapping) of each id in ``current``: the semantic channel embeds it."""

    @property
    def empty(self) -> bool:
        """True when the tail changes nothing."""
        return not self.current and not self.gone


@dataclass(frozen=True, slots=True)
class MergedView:
    """Postings and statistics as the projection will hold them after the tail."""

    postings: dict[str, Sequence[Posting]]
    stats: CorpusStats
    dfs: dict[str, int]


def _merged_postings(read: Sequence[Posting], replaced: frozenset[str],
                     arrived: list[Posting], k: int) -> Sequence[Posting]:
    """A term's postings read, less the replaced records', plus the arrived ones, best k."""
    if isinstance(read, PostingColumns):  # a search's read: kept as columns
        kept = read.without(replaced)
        return kept.plus(PostingColumns.of(
            (impact_code(p.tf, p.lengths), p) for p in arrived)).best(k)
    kept_postings = [p for p in read if p.record_id not in replaced]
    return top_postings([*kept_postings, *arrived], k)


def merge_tail(terms: Sequence[str], postings: Mapping[str, Sequence[Posting]],
               stats: CorpusStats, dfs: Mapping[str, int], delta: TailDelta,
               k: int) -> MergedView:
    """The projection's view of the query terms with the tail applied."""
    if delta.empty:
        return MergedView({t: postings.get(t, ()) for t in terms}, stats, dict(dfs))
    added = [doc for doc in delta.current if doc.record_id in delta.uncounted]
    replaced = delta.gone | {doc.record_id for doc in delta.current}
    merged: dict[str, Sequence[Posting]] = {}
    new_dfs: dict[str, int] = {}
    for term in dict.fromkeys(terms):
        arrived = [Posting(doc.record_id, doc.frequencies[term], doc.lengths)
                   for doc in delta.current if term in doc.frequencies]
        merged[term] = _merged_postings(postings.get(term, ()), replaced, arrived, k)
        gained = sum(1 for doc in added if term in doc.frequencies)
        lost = sum(1 for doc in delta.counted_gone if term in doc.terms)
        new_dfs[term] = max(0, dfs.get(term, 0) + gained - lost)
    sums = list(stats.length_sums)
    for doc in added:
        sums = [s + n for s, n in zip(sums, doc.lengths, strict=True)]
    for gone in delta.counted_gone:
        sums = [s - n for s, n in zip(sums, gone.lengths, strict=True)]
    count = stats.doc_count + len(added) - len(delta.counted_gone)
    return MergedView(merged, CorpusStats(max(0, count), tuple(max(0, s) for s in sums)),
                      new_dfs)
