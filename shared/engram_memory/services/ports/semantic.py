"""Ports of the semantic channel: an embedder (texts → unit vectors) and a vector index.

Adapters raise :class:`SemanticChannelError` for every failure of the channel (model
missing or corrupt, index unreachable, throttled, timed out); the services decide what
that means for the call (docs/semantic.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

Vector = tuple[float, ...]


class SemanticChannelError(Exception):
    """The semantic channel failed; never carries model, index or record content."""


@dataclass(frozen=True, slots=True)
class EmbedderInfo:
    """What a vector was made with: it goes into the rank receipt and the config digest."""

    model_id: str
    dimension: int
    version: str  # the sha256 of the model file, or the managed model's version id


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One nearest neighbour: the record and its cosine similarity to the query."""

    record_id: str
    similarity: float


class Embedder(Protocol):
    """Texts → L2-normalized vectors of ``info.dimension`` floats, in input order."""

    @property
    def network(self) -> bool:
        """True when embedding leaves the deployment (a managed model endpoint)."""
        ...

    @property
    def info(self) -> EmbedderInfo:
        """Model id, dimension and version; raises SemanticChannelError if unknowable."""
        ...

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One unit vector per text; raises SemanticChannelError."""
        ...


class VectorIndex(Protocol):
    """Vectors keyed by scope + record id; queries are filtered to one scope."""

    @property
    def version(self) -> str:
        """Names the index (kind, name, metric): part of the receipt."""
        ...

    def put(self, scope: Scope, record_id: str, vector: Vector) -> None:
        """Store (or overwrite) the record's vector with its scope as filterable metadata."""
        ...

    def delete(self, scope: Scope, record_id: str) -> None:
        """Remove the record's vector; absent is fine."""
        ...

    def query(self, scope: Scope, vector: Vector, top_k: int) -> list[VectorHit]:
        """The ``top_k`` (≤ 100) most similar vectors of the scope, most similar first."""
        ...
