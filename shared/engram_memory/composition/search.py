"""Composition root of engram_memory_search (no semantic channel in this deployment)."""

from __future__ import annotations

from engram_memory import bootstrap, semantic_wiring
from engram_memory.adapters.dynamodb.previous_generation import previous_generation
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.composition.reads import record_reader, semantic_channel
from engram_memory.domain.ranking import DEFAULT_POSTINGS_PER_TERM, RankingConfig
from engram_memory.services.paging import PageCursorCodec
from engram_memory.services.redaction import Redactor
from engram_memory.services.search import SearchService
from engram_memory.services.search_tail import DEFAULT_TAIL_BOUND
from engram_memory.settings import Settings


def ranking_config(s: Settings) -> RankingConfig:
    """The lexical ranking parameters of this deployment (bench/retrieval_eval.py too)."""
    return RankingConfig(postings_per_term=s.search_postings_per_term or
                         DEFAULT_POSTINGS_PER_TERM)


@bootstrap.per_container
def service() -> SearchService:
    """The search use case."""
    s = bootstrap.settings()
    config = ranking_config(s)
    projection = DynamoProjectionStore(bootstrap.dynamodb_client(), s.projection_table_name)
    generation = previous_generation()
    previous = (None if generation is None else
                DynamoProjectionStore(bootstrap.dynamodb_client(), s.projection_table_name,
                                      generation))
    return SearchService(record_reader(), projection, bootstrap.clock(),
                         PageCursorCodec(bootstrap.page_cursor_secret()),
                         Redactor(s.redaction_allowlist), config,
                         semantic_wiring.channel_settings(s, semantic_channel()),
                         tail_bound=s.search_tail_bound or DEFAULT_TAIL_BOUND,
                         purpose_scope=s.purpose_scope, previous=previous)
