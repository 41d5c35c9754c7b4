"""The semantic channel: embed records into the vector index, rank a query by meaning.

Text of a record = its primary component, then the decision, evidence and context texts
(citations are locators, not meaning), each distinct text once, joined by newlines; the
model truncates it at its token limit, so the primary text always counts. A text repeated
in two fields (a decision that restates the primary, a note stored as both primary and
context) is embedded once: a repeat adds no meaning, only tokens, and under the token limit
it would push the following fields out. The channel's config digest covers the
model (id, dimension, file hash), the index, the text rule and the neighbours read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.fusion import SEMANTIC_TOP_K, ChannelReceipt
from engram_memory.domain.ranking import SCORE_DECIMALS, ScoredRecord
from engram_memory.domain.search_fields import record_document

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope
    from engram_memory.services.ports.semantic import Embedder, Vector, VectorIndex

TEXT_RULE = "primary+decision+evidence+context/v2-distinct"
_TEXT_FIELDS = ("primary", "decision", "evidence", "context")
QUERY_RULE = "question-without-names/v1"
_NAME = re.compile(r"[A-Z][a-z]+(?:'s|’s)?[?,.!;:]*")


def query_text(query: str) -> str:
    """What the embedder reads of a query: a question (ending in ``?``) without its
    capitalized words after the first (the names in it); any other query as it is.

    Why (docs/decisions/fusion.md, "The conversational target"): a question about a memory names the
    person it is about, who is usually its speaker, and a turn rarely contains its own
    speaker's name. The model's vector of a short question is dominated by the name, so it
    ranks the turns that address that person instead of those that answer. Names still
    count in the lexical channel, which matches them exactly.
    """
    if not query.rstrip().endswith("?"):
        return query
    words = query.split()
    kept = [w for i, w in enumerate(words) if i == 0 or not _NAME.fullmatch(w)]
    return " ".join(kept) if len(kept) > 1 else query


@dataclass(frozen=True, slots=True)
class Nearest:
    """A query's vector and the index's nearest records to it (before the journal tail)."""

    vector: Vector
    similarities: dict[str, float]


def record_text(record_id: str, record: Mapping[str, Any]) -> str:
    """What the embedder reads of a record."""
    fields = record_document(record_id, record).fields
    return "\n".join(dict.fromkeys(fields[name] for name in _TEXT_FIELDS if fields.get(name)))


class SemanticChannel:
    """Embedder + vector index, used by the projector (write) and search (read)."""

    def __init__(self, embedder: Embedder, index: VectorIndex,
                 top_k: int = SEMANTIC_TOP_K) -> None:
        self._embedder = embedder
        self._index = index
        self._top_k = top_k

    @property
    def uses_network(self) -> bool:
        """True when embedding a query leaves the deployment (a managed model)."""
        return self._embedder.network

    def receipt(self) -> ChannelReceipt:
        """How this channel ranks, as the rank receipt names it."""
        info = self._embedder.info
        config = {"model_id": info.model_id, "dimension": info.dimension,
                  "model_version": info.version, "index": self._index.version,
                  "text_rule": TEXT_RULE, "query_rule": QUERY_RULE, "top_k": self._top_k,
                  "similarity": "cosine"}
        return ChannelReceipt(channel="semantic", model=info.model_id, version=info.version,
                              index=self._index.version,
                              config_digest=digest(DigestKind.RANK_CONFIG, config))

    def index_record(self, scope: Scope, record_id: str, record: Mapping[str, Any]) -> None:
        """Embed the record and put its vector (an overwrite when it is already there)."""
        [vector] = self._embedder.embed([record_text(record_id, record)])
        self._index.put(scope, record_id, vector)

    def index_records(self, records: Sequence[tuple[Scope, str, Mapping[str, Any]]]) -> None:
        """Embed every record in one embedder call, then put each vector (a batch of the
        projector: the vectors equal those :meth:`index_record` puts one at a time)."""
        vectors = self._embedder.embed([record_text(rid, record) for _, rid, record in records])
        for (scope, record_id, _), vector in zip(records, vectors, strict=True):
            self._index.put(scope, record_id, vector)

    def remove(self, scope: Scope, record_id: str) -> None:
        """Delete the record's vector (absent is fine)."""
        self._index.delete(scope, record_id)

    def nearest(self, scope: Scope, query: str) -> Nearest:
        """Embed the query and read the index's nearest records (the channel's round trip,
        which search runs beside its lexical reads)."""
        [vector] = self._embedder.embed([query_text(query)])
        return Nearest(vector, {h.record_id: h.similarity for h in
                                self._index.query(scope, vector, self._top_k)})

    def with_tail(self, nearest: Nearest,
                  tail: Mapping[str, Mapping[str, Any] | None] | None = None
                  ) -> list[ScoredRecord]:
        """The index's answer corrected by the journal tail, ranked.

        ``tail`` maps the records of the journal tail (not yet applied by the projector) to
        their current record, or None when they are no longer current: those are embedded
        now (or dropped), so the channel reads its own writes like the lexical one.
        """
        hits = dict(nearest.similarities)
        current = {rid: rec for rid, rec in (tail or {}).items() if rec is not None}
        for record_id in tail or {}:
            hits.pop(record_id, None)
        vectors = self._embedder.embed([record_text(rid, rec) for rid, rec in current.items()])
        for record_id, vector in zip(current, vectors, strict=True):
            hits[record_id] = sum(a * b for a, b in zip(vector, nearest.vector, strict=True))
        ranked = sorted(((round(s, SCORE_DECIMALS), rid) for rid, s in hits.items()),
                        key=lambda p: (-p[0], p[1]))
        return [ScoredRecord(rid, s) for s, rid in ranked[:self._top_k]]
