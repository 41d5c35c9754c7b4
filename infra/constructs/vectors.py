"""The tenant's vector index for the semantic channel (Amazon S3 Vectors; docs/search.md).

One vector bucket and one cosine index per tenant stack; the dimension is the embedder's
(384 for the in-deployment all-MiniLM-L6-v2, 256/512/1024 for Titan V2). Metadata key
``scope`` stays filterable (the default): every query filters on it. Encryption: SSE-S3
(AES256), declared explicitly (docs/search.md says why not the tenant CMK yet).
Grants: the projector may put and delete vectors, search may query (QueryVectors with a
filter also needs GetVectors), both on this index only; nothing else may touch it.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3vectors as s3vectors
from constructs import Construct

INDEX_NAME: Final = "records"
PROJECTOR_ACTIONS: Final = ("s3vectors:PutVectors", "s3vectors:DeleteVectors")
SEARCH_ACTIONS: Final = ("s3vectors:QueryVectors", "s3vectors:GetVectors")
TITAN_MODEL_ID: Final = "amazon.titan-embed-text-v2:0"


class VectorStore(Construct):
    """A vector bucket and its one index."""

    def __init__(self, scope: Construct, construct_id: str, *, tenant_id: str,
                 dimension: int) -> None:
        """Declare the bucket (named after the tenant) and the cosine index."""
        super().__init__(scope, construct_id)
        self.bucket_name = f"engram-{tenant_id}-vectors"
        self.index_name = INDEX_NAME
        self.bucket = s3vectors.CfnVectorBucket(
            self, "Bucket", vector_bucket_name=self.bucket_name,
            encryption_configuration=s3vectors.CfnVectorBucket.EncryptionConfigurationProperty(
                sse_type="AES256"))
        self.index = s3vectors.CfnIndex(
            self, "Index", vector_bucket_name=self.bucket_name, index_name=INDEX_NAME,
            data_type="float32", dimension=dimension, distance_metric="cosine")
        self.index.add_dependency(self.bucket)

    @property
    def index_arn(self) -> str:
        """The index ARN every grant is scoped to."""
        return self.index.attr_index_arn

    def statement(self, actions: tuple[str, ...]) -> iam.PolicyStatement:
        """``actions`` on this index only."""
        return iam.PolicyStatement(actions=list(actions), resources=[self.index_arn])


def titan_statement(scope: Construct) -> iam.PolicyStatement:
    """InvokeModel on Titan Text Embeddings V2 in the stack's region, nothing else."""
    region = Stack.of(scope).region
    return iam.PolicyStatement(
        actions=["bedrock:InvokeModel"],
        resources=[f"arn:aws:bedrock:{region}::foundation-model/{TITAN_MODEL_ID}"])
