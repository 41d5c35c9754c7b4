"""Fusion of ranked channels (lexical BM25F, semantic cosine) into one order.

Rule ``convex``, the deployed default: each channel's scores are min-max normalized over
its list (per query), then ``fused = Σ_c w_c · norm_c(d)``, with w_lexical = 0.75 and
w_semantic = 0.25. Rule ``rrf`` (reciprocal rank fusion, Cormack et al. 2009):

    fused(d) = Σ_c  w_c / (k + rank_c(d))      rank_c = 1-based rank of d in channel c

A document absent from a channel gets nothing from it. Chosen by measurement on the
development halves of Cranfield and LoCoMo (docs/search.md, "Fusion"). Ties: the fused
score is rounded (ranking.SCORE_DECIMALS), then record_id ascending, as for the lexical
channel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.ranking import ScoredRecord, order

RULES = ("rrf", "convex")
DEPLOYED_RULE = "convex"
DEPLOYED_LEXICAL_WEIGHT = 0.75
"""The deployment's fusion (settings' defaults): chosen on development queries only."""
SEMANTIC_TOP_K = 100
"""Nearest neighbours read per search (S3 Vectors' QueryVectors allows at most 100)."""


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """How channels are combined: rule, its constant, one weight per channel."""

    rule: str = "rrf"
    rrf_k: int = 60
    lexical_weight: float = 1.0
    semantic_weight: float = 1.0
    semantic_top_k: int = SEMANTIC_TOP_K
    version: str = "1"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError("unknown fusion rule")
        if self.rrf_k < 1 or not 1 <= self.semantic_top_k <= SEMANTIC_TOP_K:
            raise ValueError("rrf_k and semantic_top_k out of range")
        if self.lexical_weight < 0 or self.semantic_weight <= 0:
            raise ValueError("weights: lexical >= 0, semantic > 0")

    @property
    def profile(self) -> str:
        """The receipt's profile name for a fused ranking."""
        if self.lexical_weight == 0:
            return "semantic-only"
        return f"hybrid-{self.rule}"

    def as_dict(self) -> dict[str, Any]:
        """The canonical description a config digest covers."""
        if self.rule == "convex":
            return {"rule": self.rule, "normalization": "min-max per query",
                    "version": self.version, "semantic_top_k": self.semantic_top_k,
                    "weights": {"lexical": self.lexical_weight,
                                "semantic": self.semantic_weight}}
        return {"rule": self.rule, "rrf_k": self.rrf_k, "version": self.version,
                "weights": {"lexical": self.lexical_weight, "semantic": self.semantic_weight},
                "semantic_top_k": self.semantic_top_k}


@dataclass(frozen=True, slots=True)
class ChannelReceipt:
    """One channel a ranking used, as the rank receipt names it."""

    channel: str  # "lexical" | "semantic"
    model: str  # ranking profile (lexical) or embedding model id (semantic)
    version: str  # profile version, or the model file's sha256
    index: str  # what was searched: the lexical projection or the vector index
    config_digest: str

    def as_dict(self) -> dict[str, str]:
        """The receipt's JSON form."""
        return {"channel": self.channel, "model": self.model, "version": self.version,
                "index": self.index, "config_digest": self.config_digest}


def fused_config_digest(config: FusionConfig, channels: Sequence[ChannelReceipt]) -> str:
    """Digest of the fusion rule and of every channel's own config digest, in order."""
    return digest(DigestKind.RANK_CONFIG, {
        "fusion": config.as_dict(),
        "channels": [c.as_dict() for c in channels],
    })


def _rrf(lists: Sequence[tuple[float, Sequence[ScoredRecord]]], k: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for weight, ranked in lists:
        for rank, hit in enumerate(ranked, start=1):
            scores[hit.record_id] = scores.get(hit.record_id, 0.0) + weight / (k + rank)
    return scores


def _normalized(ranked: Sequence[ScoredRecord]) -> Mapping[str, float]:
    if not ranked:
        return {}
    high = max(h.score for h in ranked)
    low = min(h.score for h in ranked)
    span = high - low
    return {h.record_id: (h.score - low) / span if span > 0 else 1.0 for h in ranked}


def _convex(lists: Sequence[tuple[float, Sequence[ScoredRecord]]]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for weight, ranked in lists:
        for record_id, value in _normalized(ranked).items():
            scores[record_id] = scores.get(record_id, 0.0) + weight * value
    return scores


def fuse(lexical: Sequence[ScoredRecord], semantic: Sequence[ScoredRecord],
         config: FusionConfig) -> list[ScoredRecord]:
    """One deterministic order from the two channels' orders (each already ordered)."""
    lists: list[tuple[float, Sequence[ScoredRecord]]] = [(config.semantic_weight, semantic)]
    if config.lexical_weight > 0:
        lists.insert(0, (config.lexical_weight, lexical))
    if config.rule == "rrf":
        return order(_rrf(lists, config.rrf_k))
    return order(_convex(lists))
