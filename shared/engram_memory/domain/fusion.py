"""Fusion of ranked channels (lexical BM25F, semantic cosine) into one order.

Rule ``convex``, the deployed default: each channel's scores are min-max normalized over
its list (per query), then ``fused = Σ_c w_c · norm_c(d)``, with w_lexical = 0.5 and
w_semantic = 0.5. Rule ``rrf`` (reciprocal rank fusion, Cormack et al. 2009):

    fused(d) = Σ_c  w_c / (k + rank_c(d))      rank_c = 1-based rank of d in channel c

A document absent from a channel gets nothing from it. Chosen by measurement on the
LoCoMo conversations (bench/fusion_loco.py) with Cranfield's development half as a guard
(docs/decisions/fusion.md, "The conversational target"). Ties: the fused score is rounded
(ranking.SCORE_DECIMALS), then record_id ascending, as for the lexical channel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.ranking import ScoredRecord, order

RULES = ("rrf", "convex")
NORMALIZATIONS = ("min-max", "z-score", "max")
"""How ``convex`` puts a channel's scores on one scale (per query, over the channel's list):
``min-max`` (s − min) / (max − min), the deployed one; ``z-score`` (s − mean) / σ, an
absent record getting the list's lowest z; ``max`` s / max (BM25F and cosine keep their
zero). The last two were measured and rejected on conversations (docs/decisions/fusion.md)."""
DEPLOYED_RULE = "convex"
DEPLOYED_LEXICAL_WEIGHT = 0.5
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
    normalization: str = "min-max"

    def __post_init__(self) -> None:
        if self.rule not in RULES or self.normalization not in NORMALIZATIONS:
            raise ValueError("unknown fusion rule or normalization")
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
            return {"rule": self.rule, "normalization": f"{self.normalization} per query",
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


def normalized(ranked: Sequence[ScoredRecord], method: str = "min-max"
               ) -> tuple[Mapping[str, float], float]:
    """Each record's normalized score over one channel's list, and what a record absent
    from that list gets (0, or the lowest z for ``z-score``)."""
    if not ranked:
        return {}, 0.0
    values = [h.score for h in ranked]
    if method == "z-score":
        mean = sum(values) / len(values)
        sigma = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if sigma == 0:
            return {h.record_id: 0.0 for h in ranked}, 0.0
        z = {h.record_id: (h.score - mean) / sigma for h in ranked}
        return z, min(z.values())
    if method == "max":
        high = max(values)
        return {h.record_id: h.score / high if high > 0 else 0.0 for h in ranked}, 0.0
    high, low = max(values), min(values)
    span = high - low
    return {h.record_id: (h.score - low) / span if span > 0 else 1.0 for h in ranked}, 0.0


def _convex(lists: Sequence[tuple[float, Sequence[ScoredRecord]]],
            method: str) -> dict[str, float]:
    channels = [(weight, *normalized(ranked, method)) for weight, ranked in lists]
    every = {record_id for _, values, _ in channels for record_id in values}
    return {record_id: sum(weight * values.get(record_id, absent)
                           for weight, values, absent in channels)
            for record_id in every}


def fuse(lexical: Sequence[ScoredRecord], semantic: Sequence[ScoredRecord],
         config: FusionConfig) -> Sequence[ScoredRecord]:
    """One deterministic order from the two channels' orders (each already ordered)."""
    lists: list[tuple[float, Sequence[ScoredRecord]]] = [
        (config.semantic_weight, semantic[:config.semantic_top_k])]
    if config.lexical_weight > 0:
        lists.insert(0, (config.lexical_weight, lexical))
    if config.rule == "rrf":
        return order(_rrf(lists, config.rrf_k))
    return order(_convex(lists, config.normalization))
