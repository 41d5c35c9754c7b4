"""Create the tenant's tables and KMS key (local service and moto tests) as the stack does.

The table shapes (key schema, attributes, indexes, billing, stream, TTL attribute, PITR) are not
written here: they are read from ``stack_shapes.json``, generated from the synthesized CDK
stack (``python -m infra.local_shapes``; ``tests/infra/test_local_shapes.py`` fails when
it is stale), so local mode cannot drift from what a deploy creates.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from engram_memory.settings import Settings

SHAPES_FILE = Path(__file__).with_name("stack_shapes.json")


@cache
def stack_shapes() -> dict[str, Any]:
    """The generated shapes of the stack's tables and confirmation queue."""
    shapes: dict[str, Any] = json.loads(SHAPES_FILE.read_text(encoding="utf-8"))
    return shapes


def _create_table(client: Any, name: str, shape: dict[str, Any]) -> bool:
    """Create one table; False when it already exists (provisioning is re-runnable)."""
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": shape["KeySchema"],
        "AttributeDefinitions": shape["AttributeDefinitions"],
        "BillingMode": shape["BillingMode"],
    }
    if shape.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = shape["GlobalSecondaryIndexes"]
    if shape["StreamViewType"]:
        kwargs["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": shape["StreamViewType"],
        }
    try:
        client.create_table(**kwargs)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceInUseException":
            return False
        raise
    client.get_waiter("table_exists").wait(TableName=name)
    if shape["PointInTimeRecovery"]:
        client.update_continuous_backups(
            TableName=name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    if shape["TtlAttribute"]:
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": shape["TtlAttribute"]},
        )
    return True


def create_tables(dynamodb_client: Any, settings: Settings) -> None:
    """Create the main, key and projection tables with the stack's shapes."""
    tables = stack_shapes()["tables"]
    _create_table(dynamodb_client, settings.table_name, tables["main"])
    _create_table(dynamodb_client, settings.key_table_name, tables["keys"])
    _create_table(dynamodb_client, settings.projection_table_name, tables["projection"])


def create_tenant_key(kms_client: Any, description: str = "engram-memory tenant key") -> str:
    """Create the symmetric tenant KMS key that wraps per-candidate data keys; its id."""
    response = kms_client.create_key(
        Description=description,
        KeyUsage="ENCRYPT_DECRYPT",
        KeySpec="SYMMETRIC_DEFAULT",
    )
    return str(response["KeyMetadata"]["KeyId"])
