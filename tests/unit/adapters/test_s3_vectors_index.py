"""The S3 Vectors adapter: Put/Delete against moto, QueryVectors against the API model
(botocore's Stubber: moto 5 has no QueryVectors)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber
from engram_memory.adapters.vectors.s3_vectors import S3VectorsIndex
from engram_memory.domain.context import Scope
from engram_memory.services.ports.semantic import SemanticChannelError
from moto import mock_aws

from tests.support.semantic import BUCKET, INDEX, create_vector_index, stored_keys

SCOPE = Scope("tenant-a", "ws-main")
UNIT = tuple([1.0] + [0.0] * 383)


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def test_put_overwrites_and_delete_removes_on_moto() -> None:
    with mock_aws():
        client = create_vector_index()
        index = S3VectorsIndex(client, BUCKET, INDEX)
        index.put(SCOPE, "mem_a", UNIT)
        index.put(SCOPE, "mem_a", UNIT)
        index.put(Scope("tenant-a", "ws-other"), "mem_b", UNIT)
        assert stored_keys(client) == {"tenant-a#ws-main#mem_a", "tenant-a#ws-other#mem_b"}
        stored = client.get_vectors(vectorBucketName=BUCKET, indexName=INDEX,
                                    keys=["tenant-a#ws-main#mem_a"], returnMetadata=True)
        assert stored["vectors"][0]["metadata"] == {"scope": "tenant-a#ws-main"}
        index.delete(SCOPE, "mem_a")
        index.delete(SCOPE, "mem_never")
        assert stored_keys(client) == {"tenant-a#ws-other#mem_b"}


def test_a_missing_index_is_a_channel_failure_on_moto() -> None:
    with mock_aws():
        client = create_vector_index()
        with pytest.raises(SemanticChannelError):
            S3VectorsIndex(client, BUCKET, "absent").put(SCOPE, "mem_a", UNIT)


def test_query_filters_on_the_scope_and_turns_distance_into_similarity() -> None:
    client = boto3.client("s3vectors", region_name="us-east-1")
    index = S3VectorsIndex(client, BUCKET, INDEX)
    with Stubber(client) as stub:
        stub.add_response("query_vectors", {
            "vectors": [
                {"key": "tenant-a#ws-main#mem_a", "distance": 0.25},
                {"key": "tenant-a#ws-other#mem_x", "distance": 0.3},  # never trusted
                {"key": "tenant-a#ws-main#mem_b", "distance": 0.5},
            ],
            "distanceMetric": "cosine",
        }, {
            "vectorBucketName": BUCKET, "indexName": INDEX, "topK": 100,
            "queryVector": {"float32": list(UNIT)},
            "filter": {"scope": {"$eq": "tenant-a#ws-main"}},
            "returnDistance": True, "returnMetadata": False,
        })
        hits = index.query(SCOPE, UNIT, 500)
    assert [(h.record_id, h.similarity) for h in hits] == [("mem_a", 0.75), ("mem_b", 0.5)]


def test_query_errors_are_channel_failures() -> None:
    client = boto3.client("s3vectors", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("query_vectors", "ServiceUnavailableException",
                              http_status_code=503)
        with pytest.raises(SemanticChannelError):
            S3VectorsIndex(client, BUCKET, INDEX).query(SCOPE, UNIT, 10)
