"""Expiry removes a record's vector from the semantic index (moto + the committed model).

Through the real path: the sweeper handler expires the record, the projector handler
drains the stream and deletes the vector from moto's S3 Vectors index; search (the
handler, ``lexical_and_semantic``) never returns the record, before the projector has
run (revalidation against canonical state) or after.
"""

from __future__ import annotations

from typing import Any

import pytest
from engram_memory.domain.context import Tool
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.search.handler import lambda_handler as search_handler
from tests.fixtures.contract_fixtures import PURPOSE_REF
from tests.integration.conftest import AwsEnv
from tests.integration.expiry.support import HOUR_MS, Expiry, wire
from tests.support.events import make_event
from tests.support.semantic import SEMANTIC_ENV, create_vector_index, stored_keys

BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}
# No term shared with either record: only the semantic channel can find them.
PARAPHRASE = "what did we agree on for payment failures"


@pytest.fixture
def semantic_expiry(aws: AwsEnv) -> tuple[Expiry, Any]:
    """The expiry tenant with the semantic channel configured; the vector index client."""
    client = create_vector_index()
    aws.configure(**SEMANTIC_ENV)
    return wire(aws), client


def semantic_search(query: str) -> list[str]:
    envelope = search_handler(
        make_event(Tool.SEARCH, {"query": query, "purpose_ref": PURPOSE_REF,
                                 "capability_policy": BOTH}),
        LocalLambdaContext(function_name="search"))
    assert envelope["ok"], envelope
    assert {c["channel"] for c in envelope["output"]["value"]["rank_receipt"]["channels"]} == {
        "lexical", "semantic"}
    return [packet["record"]["record_id"] for packet in envelope["output"]["value"]["records"]]


def test_an_expired_records_vector_leaves_the_index_and_search_never_returns_it(
        semantic_expiry: tuple[Expiry, Any]) -> None:
    expiry, client = semantic_expiry
    expiring = expiry.admit("Backoff policy for the billing service: exponential, five tries.",
                            expires_in_ms=HOUR_MS)
    kept = expiry.admit("Retries for invoice charges back off for at most ten minutes.")
    expiry.project()
    assert {key.rsplit("#", 1)[1] for key in stored_keys(client)} == {expiring, kept}
    assert set(semantic_search(PARAPHRASE)) == {expiring, kept}

    expiry.clock.now += 2 * HOUR_MS
    assert expiry.sweep()["expired"] == 1
    # The vector is still in the index (the projector has not run): revalidation hides it.
    assert len(stored_keys(client)) == 2
    assert semantic_search(PARAPHRASE) == [kept]

    expiry.project()
    assert {key.rsplit("#", 1)[1] for key in stored_keys(client)} == {kept}
    assert expiry.record_item(expiring)["projection_invalidation"]["S"] == "complete"
    expiry.clock.now -= 2 * HOUR_MS  # canonical state, not the clock, refuses it now
    assert semantic_search(PARAPHRASE) == [kept]
