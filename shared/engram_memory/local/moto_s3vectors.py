"""Local S3 Vectors: the real adapter against moto, with an exact top-k for QueryVectors.

moto 5 implements vector buckets, indexes and Put/Get/List/DeleteVectors but not
QueryVectors. Locally the adapter's puts and deletes go to moto through boto3 like in AWS;
the query is answered exactly (adapters/vectors/exact_top_k.py) over the vectors moto holds
for the index, filtered on the same ``scope`` metadata that the AWS query filters on, in
the process that runs moto (``moto_backends``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.adapters.vectors.s3_vectors import MAX_TOP_K, S3VectorsIndex, record_of
from engram_memory.local import moto_backends
from engram_memory.local.moto_server import DEFAULT_REGION
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


class MotoS3VectorsIndex(S3VectorsIndex):
    """S3VectorsIndex whose query runs exactly over moto's stored vectors."""

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
        try:
            ranked = moto_backends.current().scope_top_k(
                self._region, *self._names, scope.key, list(vector), min(top_k, MAX_TOP_K))
        except Exception:  # moto's own errors (no such index) or the moto process gone
            raise SemanticChannelError from None
        hits = [(record_of(scope, key), similarity) for key, similarity in ranked]
        return [VectorHit(rid, sim) for rid, sim in hits if rid is not None]
