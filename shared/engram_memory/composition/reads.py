"""Adapters the read path shares (search, get, projector; docs/search.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.record_reader import DynamoRecordReader

if TYPE_CHECKING:
    from engram_memory.services.semantic import SemanticChannel

_UNSET = object()


def record_reader() -> DynamoRecordReader:
    """Canonical records, read for revalidation and get."""
    return DynamoRecordReader(bootstrap.dynamodb_client(), bootstrap.settings().table_name)


@bootstrap.per_container
def semantic_channel() -> SemanticChannel | None:
    """The semantic channel (embedder + vector index) when configured; docs/semantic.md."""
    overridden = bootstrap.port("semantic", _UNSET)
    if overridden is not _UNSET:
        return overridden  # type: ignore[no-any-return]
    from engram_memory import semantic_wiring  # only a deployment that configures it

    return semantic_wiring.semantic_channel(bootstrap.settings(), bootstrap.client,
                                            bootstrap.provided("vector_index"))
