"""The tenant's DynamoDB tables (docs/storage.md) and the statements that reach them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct
from engram_memory.adapters.dynamodb.items import WAITING_PK, WAITING_SK
from engram_memory.adapters.dynamodb.waiting import INDEX_NAME as WAITING_INDEX
from engram_memory.adapters.dynamodb.waiting import PROJECTED_ATTRIBUTES as WAITING_PROJECTED

if TYPE_CHECKING:
    from aws_cdk import aws_kms as kms

TTL_ATTRIBUTE: Final = "ttl"
READ: Final = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
# What one TransactWriteItems needs (the transaction itself is authorized per item action).
TRANSACT_WRITE: Final = (
    "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
)
# Confirmation items live under CONF#{tenant}#{workspace}; the gate touches nothing else.
CONFIRMATION_KEYS: Final = ("CONF#*",)


class TenantStorage(Construct):
    """Main (stream, PITR, deletion protection), keys (no PITR, no stream), projection,
    and the forget ledger (deletion protection; never restored with main)."""

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey) -> None:
        """Create the four tables, all encrypted with the tenant storage key."""
        super().__init__(scope, construct_id)
        self._key = key
        self.main = self._build_main()
        self.keys = self._build_keys()
        self.projection = self._build_projection()
        self.ledger = self._build_ledger()

    def _table(self, construct_id: str, **extra: object) -> dynamodb.Table:
        return dynamodb.Table(
            self, construct_id,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self._key,
            time_to_live_attribute=TTL_ATTRIBUTE,
            **extra,  # type: ignore[arg-type]
        )

    def _build_main(self) -> dynamodb.Table:
        main = self._table(
            "MainTable",
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True,
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # The sparse index of what waits for a human (adapters/dynamodb/waiting.py; local mode
        # creates it from the synthesized template): only waiting items carry its key attributes.
        main.add_global_secondary_index(
            index_name=WAITING_INDEX,
            partition_key=dynamodb.Attribute(name=WAITING_PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=WAITING_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(WAITING_PROJECTED),
        )
        return main

    def _build_keys(self) -> dynamodb.Table:
        # No PITR, no stream, no backup: deleting a wrapped key must be a real shred.
        # Deleting the stack shreds every pending candidate, by design.
        return self._table(
            "KeyTable",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=False,
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _build_projection(self) -> dynamodb.Table:
        # Rebuildable from the main table by replaying it through the projector.
        return self._table(
            "ProjectionTable",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=False,
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )


    def _build_ledger(self) -> dynamodb.Table:
        # The forget ledger (docs/forget-ledger.md): what a restore of the main table must
        # not roll back. Ids, digests, cursors and instants only. Its creation instant is
        # its coverage proof, so it is never replaced: deletion protection, retained.
        return self._table(
            "LedgerTable",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True,
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )


def table_statement(table: dynamodb.ITable, actions: Sequence[str], *,
                    leading_keys: Sequence[str] | None = None,
                    index: str | None = None) -> iam.PolicyStatement:
    """Item actions on one table (or one of its indexes), optionally only on partition
    keys matching patterns."""
    conditions = None
    if leading_keys:
        conditions = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(leading_keys)}}
    resource = table.table_arn if index is None else f"{table.table_arn}/index/{index}"
    return iam.PolicyStatement(actions=list(actions), resources=[resource],
                               conditions=conditions)


def stream_statements(table: dynamodb.ITable) -> list[iam.PolicyStatement]:
    """Reading the table's stream (the projector's event source mapping)."""
    assert table.table_stream_arn is not None
    return [
        iam.PolicyStatement(
            actions=["dynamodb:DescribeStream", "dynamodb:GetRecords",
                     "dynamodb:GetShardIterator"],
            resources=[table.table_stream_arn],
        ),
        # ListStreams has no resource-level permission; it reveals stream ARNs, no data.
        iam.PolicyStatement(actions=["dynamodb:ListStreams"], resources=["*"]),
    ]
