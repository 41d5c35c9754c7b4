"""The tenant's vector index for the semantic channel (Amazon S3 Vectors; docs/semantic.md).

One vector bucket and one cosine index per tenant stack; the dimension is the embedder's
(384 for the in-deployment all-MiniLM-L6-v2, 256/512/1024 for Titan V2). Metadata key
``scope`` stays filterable (the default): every query filters on it. Encryption: SSE-KMS
with the tenant's storage key, like every table (docs/deploy.md, "What the stack contains").
Grants: the projector may put and delete vectors, search may query (QueryVectors with a
filter also needs GetVectors), both on this index only; nothing else may touch it.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3vectors as s3vectors
from constructs import Construct

INDEX_NAME: Final = "records"
PROJECTOR_ACTIONS: Final = ("s3vectors:PutVectors", "s3vectors:DeleteVectors")
SEARCH_ACTIONS: Final = ("s3vectors:QueryVectors", "s3vectors:GetVectors")
TITAN_MODEL_ID: Final = "amazon.titan-embed-text-v2:0"
# The service principal that builds and maintains the index in the background
# (AWS S3 Vectors user guide, "Data protection and encryption").
INDEXING_PRINCIPAL: Final = "indexing.s3vectors.amazonaws.com"
# The encryption-context keys of S3 Vectors' calls to KMS (the key policy AWS documents).
CONTEXT_KEYS: Final = ("aws:s3vectors:arn", "aws:s3vectors:resource-id")


class VectorStore(Construct):
    """A vector bucket (encrypted with ``key``) and its one index."""

    def __init__(self, scope: Construct, construct_id: str, *, tenant_id: str,
                 dimension: int, key: kms.IKey) -> None:
        """Declare the bucket (named after the tenant) and the cosine index."""
        super().__init__(scope, construct_id)
        self.bucket_name = f"engram-{tenant_id}-vectors"
        self.index_name = INDEX_NAME
        self.key = key
        # Built from the name, not GetAtt: the key policy names the bucket and the bucket
        # names the key, and a GetAtt both ways would be a dependency cycle.
        self.bucket_arn = Stack.of(self).format_arn(
            service="s3vectors", resource="bucket", resource_name=self.bucket_name,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME)
        self._allow_indexing()
        self.bucket = s3vectors.CfnVectorBucket(
            self, "Bucket", vector_bucket_name=self.bucket_name,
            encryption_configuration=s3vectors.CfnVectorBucket.EncryptionConfigurationProperty(
                sse_type="aws:kms", kms_key_arn=key.key_arn))
        self.index = s3vectors.CfnIndex(
            self, "Index", vector_bucket_name=self.bucket_name, index_name=INDEX_NAME,
            data_type="float32", dimension=dimension, distance_metric="cosine")
        self.index.add_dependency(self.bucket)

    @property
    def index_arn(self) -> str:
        """The index ARN every grant is scoped to."""
        return self.index.attr_index_arn

    def _own_arns(self) -> list[str]:
        return [self.bucket_arn, f"{self.bucket_arn}/*"]

    def _allow_indexing(self) -> None:
        # Without it S3 Vectors cannot index in the background and CreateIndex fails.
        # Decrypt only, for this account, for this bucket, only with S3 Vectors' context.
        self.key.add_to_resource_policy(iam.PolicyStatement(
            sid="S3VectorsIndexesThisTenantsBucket",
            principals=[iam.ServicePrincipal(INDEXING_PRINCIPAL)],
            actions=["kms:Decrypt"],
            resources=["*"],
            conditions={
                "StringEquals": {"aws:SourceAccount": Stack.of(self).account},
                "ArnLike": {"aws:SourceArn": self._own_arns()},
                "ForAnyValue:StringEquals": {"kms:EncryptionContextKeys": list(CONTEXT_KEYS)},
            },
        ))

    def statement(self, actions: tuple[str, ...]) -> iam.PolicyStatement:
        """``actions`` on this index only."""
        return iam.PolicyStatement(actions=list(actions), resources=[self.index_arn])

    def key_statement(self, *, write: bool) -> iam.PolicyStatement:
        """The caller's use of the key, only with S3 Vectors' encryption context.

        S3 Vectors uses the key on the caller's behalf (a query decrypts, a put also
        generates data keys). The condition is the one AWS documents for S3 Vectors' own
        key use (its context keys), not a guessed ``kms:ViaService`` value or context
        value (docs/deploy.md, "Grants AWS does not settle").
        """
        actions = ["kms:Decrypt"] + (["kms:GenerateDataKey"] if write else [])
        return iam.PolicyStatement(
            actions=actions, resources=[self.key.key_arn],
            conditions={"ForAnyValue:StringEquals": {
                "kms:EncryptionContextKeys": list(CONTEXT_KEYS)}})


def titan_statement(scope: Construct) -> iam.PolicyStatement:
    """InvokeModel on Titan Text Embeddings V2 in the stack's region, nothing else."""
    region = Stack.of(scope).region
    return iam.PolicyStatement(
        actions=["bedrock:InvokeModel"],
        resources=[f"arn:aws:bedrock:{region}::foundation-model/{TITAN_MODEL_ID}"])
