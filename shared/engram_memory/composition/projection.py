"""Composition root of the stream projector."""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.adapters.dynamodb.scope_scan import DynamoScopes
from engram_memory.composition.reads import record_reader, semantic_channel
from engram_memory.services.projection import ProjectionService
from engram_memory.services.reindex import ProjectionRebuild


@bootstrap.per_container
def service() -> ProjectionService:
    """The projector's use case."""
    return ProjectionService(record_reader(), DynamoProjectionStore(
        bootstrap.dynamodb_client(), bootstrap.settings().projection_table_name),
        semantic_channel())


def rebuild() -> ProjectionRebuild:
    """Re-index every record into the current projection generation (an operator's tool)."""
    return ProjectionRebuild(DynamoScopes(bootstrap.dynamodb_client(),
                                          bootstrap.settings().table_name), service())
