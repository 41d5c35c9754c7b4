"""Local S3 Vectors: the real adapter against moto, with an exact top-k for QueryVectors.

moto 5 implements vector buckets, indexes and Put/Get/List/DeleteVectors but not
QueryVectors. Locally the adapter's puts and deletes go to moto through boto3 like in AWS;
the query is answered in this process, exactly (adapters/vectors/exact_top_k.py), over the
vectors moto holds for the index, filtered on the same ``scope`` metadata that the AWS
query filters on. The in-process read is possible because the local service runs moto's
server in this same process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.adapters.vectors.exact_top_k import exact_top_k
from engram_memory.adapters.vectors.s3_vectors import (
    MAX_TOP_K,
    SCOPE_METADATA,
    S3VectorsIndex,
    record_of,
)
from engram_memory.local.moto_server import DEFAULT_REGION, MOTO_ACCOUNT_ID
from engram_memory.services.ports.semantic import SemanticChannelError, Vector, VectorHit

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

DIMENSION = 384


def ensure_index(client: Any, bucket: str, index: str, dimension: int = DIMENSION) -> None:
    """Create the vector bucket and its cosine index, as the CDK stack declares them."""
    existing = {b["vectorBucketName"] for b in client.list_vector_buckets()["vectorBuckets"]}
    if bucket not in existing:
        client.create_vector_bucket(vectorBucketName=bucket)
    indexes = {i["indexName"] for i in client.list_indexes(vectorBucketName=bucket)["indexes"]}
    if index not in indexes:
        client.create_index(vectorBucketName=bucket, indexName=index, dataType="float32",
                            dimension=dimension, distanceMetric="cosine")


def _stored(bucket: str, index: str, region: str) -> dict[str, Any]:
    from moto.s3vectors.models import s3vectors_backends
    from moto.utilities.utils import get_partition

    # moto keeps one S3 Vectors backend per partition ("aws"), not per region.
    backend = s3vectors_backends[MOTO_ACCOUNT_ID][get_partition(region)]
    vectors: dict[str, Any] = backend.get_index(bucket, index_name=index, index_arn="").vectors
    return vectors


def export_vectors(bucket: str, index: str, region: str = DEFAULT_REGION) -> list[Any]:
    """Every vector of the local index (the --data-dir snapshot keeps them)."""
    if not bucket or not index:
        return []
    return [{"key": v.key, "data": v.data, "metadata": v.metadata}
            for v in _stored(bucket, index, region).values()]


def import_vectors(bucket: str, index: str, vectors: list[Any],
                   region: str = DEFAULT_REGION) -> None:
    """Put back the vectors of a snapshot (into the index ensure_index created)."""
    if not bucket or not index or not vectors:
        return
    from moto.s3vectors.models import Vector as MotoVector

    stored = _stored(bucket, index, region)
    for item in vectors:
        stored[item["key"]] = MotoVector.from_dict(item)


class MotoS3VectorsIndex(S3VectorsIndex):
    """S3VectorsIndex whose query runs in-process over moto's stored vectors."""

    def __init__(self, client: Any, bucket: str, index: str,
                 region: str = DEFAULT_REGION) -> None:
        super().__init__(client, bucket, index)
        self._region = region
        self._names = (bucket, index)

    @property
    def version(self) -> str:
        """The same index name as in AWS, marked as the local exact stand-in."""
        return super().version + ":local-exact"

    def query(self, scope: Scope, vector: Vector, top_k: int) -> list[VectorHit]:
        """Exact cosine top-k of the scope's vectors in moto's index."""
        keys, vectors = self._scope_vectors(scope)
        ranked = exact_top_k(vector, keys, vectors, min(top_k, MAX_TOP_K))
        hits = [(record_of(scope, key), similarity) for key, similarity in ranked]
        return [VectorHit(rid, sim) for rid, sim in hits if rid is not None]

    def _scope_vectors(self, scope: Scope) -> tuple[list[str], list[list[float]]]:
        try:
            items = list(_stored(*self._names, self._region).values())
        except Exception:  # moto's own errors: the index is not there
            raise SemanticChannelError from None
        keys: list[str] = []
        vectors: list[list[float]] = []
        for item in items:
            if (item.metadata or {}).get(SCOPE_METADATA) == scope.key:
                keys.append(item.key)
                vectors.append(item.data["float32"])
        return keys, vectors
