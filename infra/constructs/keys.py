"""The tenant's KMS keys: the envelope key for candidates and the storage key at rest.

Two keys so that "only capture may GenerateDataKey, only admission may Decrypt" holds on
the key that protects pending candidates: every function reaches the storage key only
through DynamoDB (``kms:ViaService``), never directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

if TYPE_CHECKING:
    from infra.tenant_config import TenantConfig

# Key administration without any cryptographic use and without CreateGrant (a grant could
# hand out Decrypt): the account can manage, rotate and schedule deletion, not read.
KEY_ADMIN_ACTIONS = (
    "kms:DescribeKey", "kms:EnableKey", "kms:DisableKey", "kms:EnableKeyRotation",
    "kms:DisableKeyRotation", "kms:GetKeyRotationStatus", "kms:RotateKeyOnDemand",
    "kms:ListKeyRotations", "kms:GetKeyPolicy", "kms:PutKeyPolicy", "kms:ListKeyPolicies",
    "kms:ListResourceTags", "kms:TagResource", "kms:UntagResource",
    "kms:UpdateKeyDescription", "kms:ListGrants", "kms:RevokeGrant", "kms:CreateAlias",
    "kms:UpdateAlias", "kms:DeleteAlias", "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion",
)


# Stream records are encrypted with the table's key. AWS documents that, but not which
# kms:ViaService value a stream read carries (the Streams endpoint is streams.dynamodb.*):
# the stream reader accepts both, the form that cannot be denied (docs/deploy.md).
STREAM_READ_SERVICES = ("dynamodb", "streams.dynamodb")

# The encryption context of a candidate (engram_memory.domain.records.encryption_context).
CONTEXT_KEYS = ("tenant", "workspace", "candidate_id")


class TenantKeys(Construct):
    """Builds the tenant envelope key and the storage key; grants their narrow uses."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig) -> None:
        """Create both keys with rotation on; the envelope key trusts no role yet."""
        super().__init__(scope, construct_id)
        self._config = config
        self.tenant_key = self._build_tenant_key()
        self.storage_key = self._build_storage_key()

    def _build_tenant_key(self) -> kms.Key:
        account = Stack.of(self).account
        policy = iam.PolicyDocument(statements=[
            iam.PolicyStatement(
                sid="KeyAdministrationOnly",
                principals=[iam.AccountRootPrincipal()],
                actions=list(KEY_ADMIN_ACTIONS),
                resources=["*"],  # in a key policy "*" means this key
                conditions={"StringEquals": {"kms:CallerAccount": account}},
            ),
        ])
        return kms.Key(
            self, "TenantKey",
            description=f"engram-memory {self._config.tenant_id}: wraps candidate data keys",
            enable_key_rotation=True,
            policy=policy,
            alias=f"alias/engram-memory/{self._config.tenant_id}/tenant",
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _build_storage_key(self) -> kms.Key:
        # Default key policy (account root): IAM decides, and every IAM grant of this key in
        # the stack carries kms:ViaService, so it is usable only through the service.
        key = kms.Key(
            self, "StorageKey",
            description=f"engram-memory {self._config.tenant_id}: tables and alarms at rest",
            enable_key_rotation=True,
            alias=f"alias/engram-memory/{self._config.tenant_id}/storage",
            removal_policy=RemovalPolicy.RETAIN,
        )
        # CloudWatch alarms publish to the encrypted alarm topic.
        key.add_to_resource_policy(iam.PolicyStatement(
            sid="CloudWatchAlarmsToEncryptedTopic",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
        ))
        return key

    def allow_generate_data_key(self, role: iam.IRole) -> None:
        """Let one role create candidate data keys (always with an encryption context)."""
        self._allow(role, "CaptureGeneratesDataKeys", "kms:GenerateDataKey")

    def allow_decrypt(self, role: iam.IRole) -> None:
        """Let one role unwrap candidate data keys (always with an encryption context)."""
        self._allow(role, "AdmissionDecryptsDataKeys", "kms:Decrypt")

    def encryption_context_conditions(self) -> dict[str, dict[str, object]]:
        """Only this tenant's candidate contexts (engram_memory.domain.records)."""
        return {
            "StringEquals": {"kms:EncryptionContext:tenant": self._config.tenant_id},
            "ForAllValues:StringEquals": {"kms:EncryptionContextKeys": list(CONTEXT_KEYS)},
        }

    def _allow(self, role: iam.IRole, sid: str, action: str) -> None:
        # The adapter binds tenant, workspace and candidate id in the encryption context;
        # a call for another tenant, or without a context, is refused by both policies.
        conditions = self.encryption_context_conditions()
        self.tenant_key.add_to_resource_policy(iam.PolicyStatement(
            sid=sid, principals=[role], actions=[action], resources=["*"],
            conditions=conditions,
        ))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=[action], resources=[self.tenant_key.key_arn], conditions=conditions,
        ))

    def storage_statement(self, *, write: bool,
                          services: tuple[str, ...] = ("dynamodb",)) -> iam.PolicyStatement:
        """Use of the storage key through the named AWS services only (``kms:ViaService``)."""
        actions = ["kms:Decrypt", "kms:DescribeKey"]
        if write:
            actions += ["kms:Encrypt", "kms:GenerateDataKey"]
        region = Stack.of(self).region
        via = [f"{service}.{region}.amazonaws.com" for service in services]
        return iam.PolicyStatement(
            actions=actions,
            resources=[self.storage_key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": via[0] if len(via) == 1 else via}},
        )
