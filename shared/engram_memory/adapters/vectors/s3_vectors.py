"""Amazon S3 Vectors as the VectorIndex port (one vector bucket + index per tenant stack).

Key of a vector = ``{tenant}#{workspace}#{record_id}``; metadata ``scope`` =
``{tenant}#{workspace}`` (declared filterable), and every query carries the filter
``scope == bound scope``, so a query can only return its own scope's vectors. Hits whose key
is not in the scope are dropped anyway (defense in depth). The index metric is cosine:
QueryVectors returns a cosine *distance*, reported here as similarity = 1 − distance.
Every AWS failure becomes SemanticChannelError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.adapters.aws_errors import AWS_FAILURES
from engram_memory.services.ports.semantic import SemanticChannelError, Vector, VectorHit

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

SCOPE_METADATA = "scope"
MAX_TOP_K = 100


def vector_key(scope: Scope, record_id: str) -> str:
    """The vector's key in the tenant's index."""
    return f"{scope.key}#{record_id}"


def record_of(scope: Scope, key: str) -> str | None:
    """The record id a key names when the key belongs to ``scope``, else None."""
    prefix = scope.key + "#"
    if not key.startswith(prefix):
        return None
    record_id = key[len(prefix):]
    return record_id if record_id and "#" not in record_id else None


class S3VectorsIndex:
    """PutVectors / DeleteVectors / QueryVectors on one vector index."""

    def __init__(self, client: Any, bucket: str, index: str) -> None:
        self._client = client
        self._bucket = bucket
        self._index = index

    @property
    def version(self) -> str:
        """Names the index searched (service, bucket/index, metric)."""
        return f"s3vectors:{self._bucket}/{self._index}:cosine"

    def put(self, scope: Scope, record_id: str, vector: Vector) -> None:
        """Store the record's vector (PutVectors overwrites an existing key)."""
        self._call("put_vectors", vectors=[{
            "key": vector_key(scope, record_id),
            "data": {"float32": list(vector)},
            "metadata": {SCOPE_METADATA: scope.key},
        }])

    def delete(self, scope: Scope, record_id: str) -> None:
        """Delete the record's vector (deleting an absent key succeeds)."""
        self._call("delete_vectors", keys=[vector_key(scope, record_id)])

    def query(self, scope: Scope, vector: Vector, top_k: int) -> list[VectorHit]:
        """The scope's ``top_k`` nearest vectors by cosine, most similar first."""
        answer = self._call("query_vectors", topK=min(top_k, MAX_TOP_K),
                            queryVector={"float32": list(vector)},
                            filter={SCOPE_METADATA: {"$eq": scope.key}},
                            returnDistance=True, returnMetadata=False)
        hits: list[VectorHit] = []
        for item in answer.get("vectors", []):
            record_id = record_of(scope, str(item.get("key", "")))
            if record_id is not None:
                hits.append(VectorHit(record_id, 1.0 - float(item.get("distance", 1.0))))
        return hits

    def _call(self, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, operation)(
                vectorBucketName=self._bucket, indexName=self._index, **kwargs)
        except AWS_FAILURES:
            raise SemanticChannelError from None
