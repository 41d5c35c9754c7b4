"""BM25F lexical ranking as pure functions (the foundation ranker).

A document has five fields, weighted primary > decision > evidence > context > citations.
Per term t, the field frequencies are length-normalized per field and combined into one
pseudo frequency (Robertson & Zaragoza's "simple BM25F"):

    tf~(t, d) = Σ_f  w_f · tf_f(t, d) / (1 − b_f + b_f · len_f(d) / avglen_f)
    score(q, d) = Σ_{t ∈ q}  idf(t) · tf~ / (k1 + tf~)
    idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))

Everything the formula needs is what the projection stores: per posting the field
frequencies and the document's field lengths, per scope N and the sum of each field's
lengths, per term its df (a counter kept with the postings). Search scores exactly the
candidates of each term's best ``postings_per_term`` postings (domain/impact.py), the best
``completion_cap`` of them with every query term (domain/completion.py).
Ties: score desc, then record_id asc. :func:`rank_documents` is the exhaustive reference
over an in-memory document set that the bounded search is compared against.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload, runtime_checkable

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.tokenizer import TOKENIZER_VERSION, query_terms, term_frequencies

FIELDS: tuple[str, ...] = ("primary", "decision", "evidence", "context", "citations")
SCORE_DECIMALS = 9
"""Scores are rounded before ordering so the order always agrees with the shown scores."""
IMPACT_VERSION = "2"
"""Version of the impact key the postings are ordered by (domain/impact.py); 2: k1 = 2.5."""
POSTING_LAYOUT_VERSION = "2"
"""Version of the stored posting layout (1: blocks of fixed record-id ranges; 2: blocks of
hashed record-id runs, domain/posting_blocks.py)."""
PROJECTION_GENERATION = f"t{TOKENIZER_VERSION}i{IMPACT_VERSION}b{POSTING_LAYOUT_VERSION}"
"""Names the projection's key space: a new tokenizer, impact key or posting layout is a new,
empty index (rebuilt from canonical state, docs/search.md "Generations"), never mixed with
the old one."""
DEFAULT_POSTINGS_PER_TERM = 3000
"""K: postings read per query term, highest impact first (chosen in docs/search.md)."""
DEFAULT_POSTINGS_BUDGET = 12000
"""B: postings one search reads over all its terms; each term gets min(K, B / terms)."""
DEFAULT_COMPLETION_CAP = 100
"""C: candidates (best by partial score) completed with every query term (domain/completion.py)."""
MIN_POSTINGS_PER_TERM = 100
"""A term always gets at least this many, however many terms share the budget."""


@dataclass(frozen=True, slots=True)
class RankingConfig:
    """BM25F parameters: k1, per-field b and per-field weight (aligned with FIELDS)."""

    # k1 = 2.5 measured on Cranfield with the stemming tokenizer (docs/search.md); b and
    # the weights stayed where they were: no other setting was better beyond noise.
    k1: float = 2.5
    b: tuple[float, ...] = (0.75, 0.75, 0.75, 0.75, 0.5)
    weights: tuple[float, ...] = (3.0, 2.0, 1.5, 1.0, 0.5)
    profile: str = "bm25f-lexical"
    version: str = "1"
    postings_per_term: int = DEFAULT_POSTINGS_PER_TERM
    postings_budget: int = DEFAULT_POSTINGS_BUDGET
    completion_cap: int = DEFAULT_COMPLETION_CAP

    def __post_init__(self) -> None:
        if len(self.b) != len(FIELDS) or len(self.weights) != len(FIELDS):
            raise ValueError("one b and one weight per field")
        if self.postings_per_term < 1 or self.postings_budget < 1:
            raise ValueError("postings_per_term and postings_budget must be positive")
        if self.completion_cap < 0:
            raise ValueError("completion_cap must not be negative")

    def postings_for(self, term_count: int) -> int:
        """Postings read per term for a query of ``term_count`` distinct terms.

        The budget is shared evenly, so a long query costs about what a short one does
        instead of terms × K (docs/search.md, "Bounded cost of one search").
        """
        share = self.postings_budget // max(1, term_count)
        return min(self.postings_per_term, max(MIN_POSTINGS_PER_TERM, share))

    def as_dict(self) -> dict[str, Any]:
        """The canonical description the config digest covers."""
        return {
            "profile": self.profile,
            "version": self.version,
            "tokenizer_version": TOKENIZER_VERSION,
            "k1": self.k1,
            "fields": [
                {"name": name, "b": b, "weight": w}
                for name, b, w in zip(FIELDS, self.b, self.weights, strict=True)
            ],
            # Which candidates are scored is part of what a receipt must name.
            "candidates": {"impact_version": IMPACT_VERSION,
                           "postings_per_term": self.postings_per_term,
                           "postings_budget": self.postings_budget,
                           "min_postings_per_term": MIN_POSTINGS_PER_TERM,
                           "completion_cap": self.completion_cap},
        }

    @property
    def config_digest(self) -> str:
        """Digest of :meth:`as_dict`: a receipt names the exact parameters it ranked with."""
        return digest(DigestKind.RANK_CONFIG, self.as_dict())


DEFAULT_CONFIG = RankingConfig()


@dataclass(frozen=True, slots=True)
class FieldDocument:
    """A record seen by the ranker: its id and one text per field name."""

    record_id: str
    fields: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class AnalyzedDocument:
    """A document's per-field lengths and, per term, its per-field frequencies."""

    record_id: str
    lengths: tuple[int, ...]
    frequencies: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Posting:
    """One (term, document) entry: per-field term frequencies and field lengths."""

    record_id: str
    tf: tuple[int, ...]
    lengths: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Per-scope statistics: N documents and the sum of each field's lengths."""

    doc_count: int
    length_sums: tuple[int, ...] = field(default=(0,) * len(FIELDS))

    def average_lengths(self) -> tuple[float, ...]:
        """Average length per field (1.0 where the corpus has nothing, to avoid 0/0)."""
        n = self.doc_count
        return tuple((s / n) if n > 0 and s > 0 else 1.0 for s in self.length_sums)


@dataclass(frozen=True, slots=True)
class ScoredRecord:
    """A ranked hit."""

    record_id: str
    score: float


def analyze(document: FieldDocument) -> AnalyzedDocument:
    """Tokenize every field of a document into lengths and per-field frequencies."""
    lengths: list[int] = []
    frequencies: dict[str, list[int]] = {}
    for index, name in enumerate(FIELDS):
        counts = term_frequencies(document.fields.get(name, ""))
        lengths.append(sum(counts.values()))
        for term, count in counts.items():
            frequencies.setdefault(term, [0] * len(FIELDS))[index] = count
    return AnalyzedDocument(
        record_id=document.record_id,
        lengths=tuple(lengths),
        frequencies={term: tuple(tf) for term, tf in frequencies.items()},
    )


def idf(doc_count: int, df: int) -> float:
    """Non-negative BM25 idf; N is never taken below df (a lagging counter stays sane)."""
    n = max(doc_count, df)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def order(scores: Mapping[str, float]) -> Ranking:
    """Deterministic order: rounded score descending, then record_id ascending."""
    return Ranking(scores)


class Ranking(Sequence[ScoredRecord]):
    """:func:`order` of some scores, ranked only as far as it is read.

    A search scores thousands of candidates and reads the first few (revalidation stops at
    its page); rounding and ordering every one cost more than scoring them. Scores are
    sorted once as floats (descending); a position is ranked on first read, with every
    candidate before it. Rounding never reverses two scores, so the candidates of one
    rounded score sit together in float order: each such run is ordered by record id
    (exactly ``sorted`` by (-rounded score, record id), tested against it).
    """

    __slots__ = ("_by_score", "_ids", "_ranked", "_scores", "_taken")

    def __init__(self, scores: Mapping[str, float]) -> None:
        self._ids = list(scores)
        self._scores = list(scores.values())
        self._by_score = sorted(range(len(self._ids)), key=self._scores.__getitem__,
                                reverse=True)
        self._ranked: list[ScoredRecord] = []
        self._taken = 0

    def _rank_to(self, stop: int) -> None:
        """Rank at least the first ``stop`` positions (fewer if there are fewer)."""
        ids, values, by_score, size = self._ids, self._scores, self._by_score, len(self._ids)
        while len(self._ranked) < stop and self._taken < size:
            first = by_score[self._taken]
            rounded = round(values[first], SCORE_DECIMALS)
            tied = [(ids[first], rounded)]
            self._taken += 1
            while self._taken < size:
                value = round(values[by_score[self._taken]], SCORE_DECIMALS)
                if value != rounded:
                    break
                tied.append((ids[by_score[self._taken]], value))
                self._taken += 1
            tied.sort(key=lambda pair: pair[0])
            self._ranked.extend(ScoredRecord(rid, value) for rid, value in tied)

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> ScoredRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[ScoredRecord]: ...

    def __getitem__(self, index: int | slice) -> ScoredRecord | list[ScoredRecord]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            self._rank_to(stop if step > 0 else start + 1)
            # Indices made absolute: the ranked prefix may be shorter than the whole.
            return [self._ranked[i] for i in range(start, stop, step)]
        self._rank_to(len(self) if index < 0 else index + 1)
        return self._ranked[index]

    def __iter__(self) -> Iterator[ScoredRecord]:
        position = 0
        while position < len(self):
            self._rank_to(position + 1)
            yield self._ranked[position]
            position += 1

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same ranked records (a list too)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Ranking({list(self)!r})"


@runtime_checkable
class ScoredInBulk(Protocol):
    """Postings that compute their own BM25F gains, all at once (domain/posting_columns.py)."""

    record_ids: list[str]

    def gains(self, weight: float, averages: Sequence[float],
              config: RankingConfig) -> tuple[list[str], list[float]]:
        """Record ids and gains of the postings with a positive pseudo frequency."""
        ...


def record_ids_of(postings: Sequence[Posting]) -> list[str]:
    """The record ids of some postings, in order."""
    if isinstance(postings, ScoredInBulk):
        return postings.record_ids
    return [p.record_id for p in postings]


def score_postings(
    terms: Sequence[str],
    postings: Mapping[str, Sequence[Posting]],
    stats: CorpusStats,
    config: RankingConfig = DEFAULT_CONFIG,
    document_frequencies: Mapping[str, int] | None = None,
) -> Ranking:
    """BM25F over the given postings of the query terms; ordered by :func:`order`.

    ``document_frequencies`` holds each term's df when ``postings`` is only part of a
    term's postings (the best K); without it, df is the number of postings given.
    """
    return order(score_map(terms, postings, stats, config, document_frequencies))


def score_map(
    terms: Sequence[str],
    postings: Mapping[str, Sequence[Posting]],
    stats: CorpusStats,
    config: RankingConfig = DEFAULT_CONFIG,
    document_frequencies: Mapping[str, int] | None = None,
) -> dict[str, float]:
    """:func:`score_postings`' scores by record id, not yet ordered (for a caller that
    changes some before ordering them once)."""
    averages = stats.average_lengths()
    scores: dict[str, float] = {}
    dfs = document_frequencies or {}
    for term in dict.fromkeys(terms):
        term_postings = postings.get(term, ())
        if not term_postings:
            continue
        # Never below what was read: a lagging counter read must not inflate idf.
        weight = idf(stats.doc_count, max(dfs.get(term, 0), len(term_postings)))
        if isinstance(term_postings, ScoredInBulk):
            ids, gains = term_postings.gains(weight, averages, config)
            for record_id, gain in zip(ids, gains, strict=True):
                scores[record_id] = scores.get(record_id, 0.0) + gain
            continue
        for posting in term_postings:
            pseudo_tf = 0.0
            for i, tf in enumerate(posting.tf):
                if tf:
                    norm = 1.0 - config.b[i] + config.b[i] * posting.lengths[i] / averages[i]
                    pseudo_tf += config.weights[i] * tf / norm
            if pseudo_tf > 0.0:
                gain = weight * pseudo_tf / (config.k1 + pseudo_tf)
                scores[posting.record_id] = scores.get(posting.record_id, 0.0) + gain
    return scores


def build_index(
    documents: Iterable[FieldDocument],
) -> tuple[dict[str, list[Posting]], CorpusStats]:
    """Postings per term and corpus statistics of an in-memory document set."""
    postings: dict[str, list[Posting]] = {}
    sums = [0] * len(FIELDS)
    count = 0
    for document in documents:
        analyzed = analyze(document)
        count += 1
        for i, length in enumerate(analyzed.lengths):
            sums[i] += length
        for term, tf in analyzed.frequencies.items():
            postings.setdefault(term, []).append(Posting(analyzed.record_id, tf, analyzed.lengths))
    return postings, CorpusStats(doc_count=count, length_sums=tuple(sums))


def rank_documents(
    query: str,
    documents: Iterable[FieldDocument],
    config: RankingConfig = DEFAULT_CONFIG,
) -> Ranking:
    """The reference ranking: exhaustive BM25F of an in-memory document set for ``query``.

    Every posting of every query term is scored, with the set's own N, df and average
    lengths. Search over the projection is bounded (each term's best postings,
    ``impact.score_top_k``, then ``completion``) and is tested against this: equal when the
    budget covers every posting, the same score for each candidate it reads otherwise.
    """
    postings, stats = build_index(documents)
    return score_postings(query_terms(query), postings, stats, config)
