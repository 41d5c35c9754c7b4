"""Score completion: the best candidates of a budgeted search get their exact BM25F score.

A search reads each query term's best postings by impact (domain/impact.py). A candidate
found through one term but outside another term's best postings gets nothing from that
term, so its score from the postings read is only a lower bound; at 50,000 records that
misorders the top (docs/performance.md, "Quality at scale"). Completion takes the best
``completion_cap`` candidates by that partial score and scores them with every query term
from their own content (analyzed exactly as the projector analyzes it), so each completed
record's score is the very score exhaustive scoring of the projection gives it. Candidates
below the cap keep their partial score.

Only terms whose read stopped at its limit (**open** terms) can be missing from a
candidate; with none open (every df within its share of the budget) the scores are
already exact and nothing is completed. Rules and cost: docs/search.md, "Score completion".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engram_memory.domain.ranking import (
    AnalyzedDocument,
    CorpusStats,
    Posting,
    RankingConfig,
    ScoredRecord,
    order,
    record_ids_of,
    score_map,
)


def open_terms(terms: Sequence[str], read: Mapping[str, Sequence[Posting]],
               limit: int) -> frozenset[str]:
    """The terms that may have postings beyond the ones read: the read returned ``limit``."""
    return frozenset(t for t in terms if len(read.get(t, ())) >= limit)


def to_complete(scores: Mapping[str, float], cap: int) -> list[str]:
    """The candidates to complete: the best ``cap`` by partial score, in :func:`order`'s
    order (so the set does not depend on the page asked for: paging stays deterministic);
    only those are ranked (``Ranking``)."""
    return [scored.record_id for scored in order(scores)[:cap]]


def lacking(record_ids: Sequence[str], postings: Mapping[str, Sequence[Posting]],
            open_: frozenset[str]) -> list[str]:
    """The candidates without a posting read under some open term (the ones whose content
    must be read to score them exactly), in the given order."""
    held = [set(record_ids_of(postings.get(t, ()))) for t in sorted(open_)]
    return [rid for rid in record_ids if any(rid not in ids for ids in held)]


def complete(scores: Mapping[str, float], terms: Sequence[str],
             postings: Mapping[str, Sequence[Posting]], stats: CorpusStats,
             dfs: Mapping[str, int], documents: Mapping[str, AnalyzedDocument],
             config: RankingConfig) -> Sequence[ScoredRecord]:
    """The ranking of ``scores`` (those of ``postings``) with the completed records' exact
    scores.

    ``documents`` are completed records as indexed (each term's per-field frequencies and
    the record's lengths, from the projection's term list or its content): each is scored with
    every query term it holds (the postings already read are the same postings); every
    other candidate keeps its score. df stays what the read counted (completion only adds
    postings the term's counter already counts), so a completed score is exactly what
    scoring every posting of the projection gives the record. Only the completed records
    are scored again.
    """
    distinct = list(dict.fromkeys(terms))
    fixed = {t: max(dfs.get(t, 0), len(postings.get(t, ()))) for t in distinct}
    completed = {t: [Posting(doc.record_id, doc.frequencies[t], doc.lengths)
                     for doc in documents.values() if t in doc.frequencies]
                 for t in distinct}
    merged = dict(scores)
    for record_id in documents:
        merged.pop(record_id, None)
    merged.update(score_map(distinct, completed, stats, config, fixed))
    return order(merged)
