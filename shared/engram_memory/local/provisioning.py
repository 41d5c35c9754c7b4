"""Create the tenant's tables and KMS key (local service and moto tests; CDK mirrors it).

The CDK stack declares the very same shapes (docs/storage.md): main table with a
NEW_AND_OLD_IMAGES stream and PITR, a key table with neither (deleting a wrapped key is a
real shred), and the projection table. All: ``pk``/``sk`` strings, on-demand, TTL ``ttl``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from engram_memory.adapters.dynamodb.items import WAITING_PK, WAITING_SK
from engram_memory.adapters.dynamodb.waiting import INDEX_NAME, PROJECTED_ATTRIBUTES

if TYPE_CHECKING:
    from engram_memory.settings import Settings

TTL_ATTRIBUTE = "ttl"
_KEY_SCHEMA = [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"},
]
_ATTRIBUTES = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
]


def waiting_index() -> dict[str, Any]:
    """The main table's sparse ``waiting`` GSI (adapters/dynamodb/waiting.py; CDK mirrors it)."""
    return {
        "IndexName": INDEX_NAME,
        "KeySchema": [{"AttributeName": WAITING_PK, "KeyType": "HASH"},
                      {"AttributeName": WAITING_SK, "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "INCLUDE",
                       "NonKeyAttributes": list(PROJECTED_ATTRIBUTES)},
    }


def _create_table(client: Any, name: str, *, stream: bool,
                  indexes: list[dict[str, Any]] | None = None) -> bool:
    """Create one table; False when it already exists (provisioning is re-runnable)."""
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": _KEY_SCHEMA,
        "AttributeDefinitions": _ATTRIBUTES,
        "BillingMode": "PAY_PER_REQUEST",
    }
    if indexes:
        kwargs["GlobalSecondaryIndexes"] = indexes
        kwargs["AttributeDefinitions"] = [*_ATTRIBUTES, *(
            {"AttributeName": k["AttributeName"], "AttributeType": "S"}
            for index in indexes for k in index["KeySchema"])]
    if stream:
        kwargs["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
    try:
        client.create_table(**kwargs)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceInUseException":
            return False
        raise
    client.get_waiter("table_exists").wait(TableName=name)
    return True


def _enable_ttl(client: Any, name: str) -> None:
    client.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )


def create_tables(dynamodb_client: Any, settings: Settings) -> None:
    """Create main (stream + PITR + the sparse waiting GSI), keys (no stream, no PITR) and
    projection tables."""
    if _create_table(dynamodb_client, settings.table_name, stream=True,
                     indexes=[waiting_index()]):
        dynamodb_client.update_continuous_backups(
            TableName=settings.table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
        _enable_ttl(dynamodb_client, settings.table_name)
    # The key table gets no TTL either: a key is deleted by the transaction that shreds it.
    _create_table(dynamodb_client, settings.key_table_name, stream=False)
    if _create_table(dynamodb_client, settings.projection_table_name, stream=False):
        _enable_ttl(dynamodb_client, settings.projection_table_name)


def create_tenant_key(kms_client: Any, description: str = "engram-memory tenant key") -> str:
    """Create the symmetric tenant KMS key that wraps per-candidate data keys; its id."""
    response = kms_client.create_key(
        Description=description,
        KeyUsage="ENCRYPT_DECRYPT",
        KeySpec="SYMMETRIC_DEFAULT",
    )
    return str(response["KeyMetadata"]["KeyId"])
