"""SemanticChannel.nearest + with_tail over the real model and moto's index, with a journal tail.

The tail is what the projector has not applied yet: records current now are embedded at
query time (found before their vector exists), records no longer current are dropped even
when their vector is still in the index.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.domain.context import Scope
from engram_memory.local.moto_s3vectors import MotoS3VectorsIndex
from engram_memory.services.semantic import SemanticChannel
from moto import mock_aws

from tests.support.semantic import BUCKET, INDEX, MODEL_DIR, create_vector_index

SCOPE = Scope("tenant-a", "ws-main")


def record(text: str) -> dict[str, object]:
    return {"primary_component_id": "c1",
            "components": [{"component_id": "c1", "kind": "decision", "text": text}]}


@pytest.fixture
def channel(monkeypatch: pytest.MonkeyPatch) -> Iterator[SemanticChannel]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        index = MotoS3VectorsIndex(create_vector_index(), BUCKET, INDEX)
        yield SemanticChannel(OnnxEmbedder(MODEL_DIR), index)


def test_the_tail_is_embedded_at_query_time_and_gone_records_are_dropped(
    channel: SemanticChannel,
) -> None:
    channel.index_record(SCOPE, "mem_billing", record("Retry policy for failed card payments."))
    channel.index_record(SCOPE, "mem_lunch", record("The team lunch is on Fridays."))
    nearest = channel.nearest(SCOPE, "how do we handle payment failures")
    assert channel.with_tail(nearest)[0].record_id == "mem_billing"
    tail = {"mem_billing": None,  # forgotten, vector not yet deleted
            "mem_new": record("Declined payments are retried three times, then refunded.")}
    ranked = [h.record_id for h in channel.with_tail(nearest, tail)]
    assert ranked == ["mem_new", "mem_lunch"]


def test_another_scopes_vectors_are_never_ranked(channel: SemanticChannel) -> None:
    channel.index_record(Scope("tenant-a", "ws-other"), "mem_x", record("payment failures"))
    channel.index_record(SCOPE, "mem_y", record("The team lunch is on Fridays."))
    ranked = channel.with_tail(channel.nearest(SCOPE, "payment failures"))
    assert [h.record_id for h in ranked] == ["mem_y"]
    channel.remove(SCOPE, "mem_y")
    assert channel.with_tail(channel.nearest(SCOPE, "payment failures")) == []
