"""Impact-ordered postings: the key that lets a search read only a term's best K postings.

A posting's impact is BM25F's saturated term frequency ``tf~ / (k1 + tf~)`` with each
field length normalized against a fixed reference length instead of the scope's live
average. It depends on the document alone (no N, df or averages), so re-indexing a record
always writes the same keys (a replay overwrites, never duplicates) and removal can
recompute them from the record when its stored list is missing (crash recovery). Within one
term idf is a constant factor, so impact order approximates the order of that term's exact
score contribution; the candidates read are then scored exactly with the live statistics.

Stored sort key: ``{impact code:09d}#{record_id}``. Read in descending key order, a term's
postings come highest impact first, ties by record_id descending (newest ULID first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram_memory.domain.ranking import (
    DEFAULT_CONFIG,
    FIELDS,
    IMPACT_VERSION,
    RankingConfig,
    ScoredRecord,
    score_postings,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from engram_memory.domain.ranking import AnalyzedDocument, CorpusStats, Posting

__all__ = ["IMPACT_VERSION", "REFERENCE_LENGTHS", "impact", "impact_code", "posting_codes",
           "record_of", "score_top_k", "sort_key", "top_postings"]

# Changing the reference lengths or the encoding changes every key: bump IMPACT_VERSION
# (ranking.py) and reindex.
REFERENCE_LENGTHS: tuple[float, ...] = (16.0, 16.0, 16.0, 48.0, 6.0)
"""Typical field lengths (tokens) of a memory record, aligned with FIELDS."""

IMPACT_DIGITS = 9
_SCALE = 1_000_000_000  # 10**IMPACT_DIGITS
INDEX_CONFIG = DEFAULT_CONFIG
"""The parameters impact keys are computed with (fixed at indexing time)."""


def impact(tf: Sequence[int], lengths: Sequence[int],
           config: RankingConfig = INDEX_CONFIG) -> float:
    """Saturated BM25F term frequency in [0, 1) against the reference field lengths."""
    pseudo_tf = 0.0
    for i in range(len(FIELDS)):
        if tf[i]:
            norm = 1.0 - config.b[i] + config.b[i] * lengths[i] / REFERENCE_LENGTHS[i]
            pseudo_tf += config.weights[i] * tf[i] / norm
    return pseudo_tf / (config.k1 + pseudo_tf)


def impact_code(tf: Sequence[int], lengths: Sequence[int],
                config: RankingConfig = INDEX_CONFIG) -> int:
    """The impact as a fixed-width non-negative integer (what the sort key orders by)."""
    return min(_SCALE - 1, max(0, math.floor(impact(tf, lengths, config) * _SCALE)))


def sort_key(code: int, record_id: str) -> str:
    """The posting's sort key: impact code, then record id (ids never contain ``#``)."""
    return f"{code:0{IMPACT_DIGITS}d}#{record_id}"


def record_of(key: str) -> str:
    """The record id of a posting sort key."""
    return key.partition("#")[2]


def posting_codes(analyzed: AnalyzedDocument) -> dict[str, int]:
    """Every term of a document with the impact code of its posting."""
    return {
        term: impact_code(tf, analyzed.lengths)
        for term, tf in analyzed.frequencies.items()
    }


def top_postings(postings: Sequence[Posting], limit: int) -> list[Posting]:
    """The ``limit`` postings a store returns first: the same order as the stored keys."""
    keyed = sorted(
        postings,
        key=lambda p: sort_key(impact_code(p.tf, p.lengths), p.record_id),
        reverse=True,
    )
    return keyed[:limit]


def score_top_k(terms: Sequence[str], postings: Mapping[str, Sequence[Posting]],
                stats: CorpusStats, config: RankingConfig = DEFAULT_CONFIG
                ) -> Sequence[ScoredRecord]:
    """The bounded search's first stage: each term's best postings within the per-search
    budget (``postings_for``), exact df; search then completes the scores of the best
    ``completion_cap`` candidates (domain/completion.py)."""
    k = config.postings_for(len(terms))
    selected = {t: top_postings(postings.get(t, []), k) for t in terms}
    dfs = {t: len(postings.get(t, [])) for t in terms}
    return score_postings(terms, selected, stats, config, dfs)
