"""Local mode only: boto3 clients for the moto server and the ``--data-dir`` snapshot.

moto keeps everything in memory, so ``engram-memory serve --data-dir`` saves what a
restart must keep: every item of the three tables (through the DynamoDB API) and the
tenant KMS key's id and material (read from moto's in-process backend, because no KMS API
exports key material). On the next start the tables are refilled and the key is put back
under its old id, so the wrapped data keys stored in the tables still unwrap. Never used
in AWS.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(connect_timeout=2, read_timeout=30, retries={"max_attempts": 3})
_BATCH = 25


def aws_client(service: str, region: str, endpoint_url: str | None) -> Any:
    """A boto3 client for ``service`` at ``endpoint_url`` (the moto server)."""
    return boto3.client(service, region_name=region,  # type: ignore[call-overload]
                        endpoint_url=endpoint_url, config=_CONFIG)


def _encode(value: Any) -> Any:
    """DynamoDB attribute values with bytes turned into JSON-safe base64 strings."""
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$b64"}:
            return base64.b64decode(value["$b64"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dump_tables(dynamodb: Any, table_names: Iterable[str]) -> dict[str, list[Any]]:
    """Every item of each table, JSON-safe."""
    dump: dict[str, list[Any]] = {}
    for name in table_names:
        items: list[Any] = []
        for page in dynamodb.get_paginator("scan").paginate(TableName=name, ConsistentRead=True):
            items.extend(_encode(item) for item in page.get("Items", []))
        dump[name] = items
    return dump


def load_tables(dynamodb: Any, dump: dict[str, list[Any]]) -> int:
    """Write the dumped items back (tables must exist); the number of items written."""
    written = 0
    for name, items in dump.items():
        for start in range(0, len(items), _BATCH):
            requests = [{"PutRequest": {"Item": _decode(item)}}
                        for item in items[start:start + _BATCH]]
            pending: dict[str, Any] = {name: requests}
            while pending:
                pending = dynamodb.batch_write_item(RequestItems=pending).get(
                    "UnprocessedItems", {})
            written += len(requests)
    return written


def _kms_backend(account_id: str, region: str) -> Any:
    from moto.kms.models import kms_backends  # local mode only: moto runs in this process

    return kms_backends[account_id][region]


def export_kms_key(account_id: str, region: str, key_id: str) -> dict[str, str]:
    """The id and material of a moto KMS key (local snapshot only)."""
    key = _kms_backend(account_id, region).keys[key_id]
    return {"key_id": key_id, "material": base64.b64encode(key.key_material).decode("ascii")}


def restore_kms_key(account_id: str, region: str, saved: dict[str, str], fresh_key_id: str) -> str:
    """Re-home the freshly created key under the saved id and material; the saved id."""
    backend = _kms_backend(account_id, region)
    key = backend.keys.pop(fresh_key_id)
    old_id = saved["key_id"]
    key.id = old_id
    key.arn = key.arn.rsplit("/", 1)[0] + "/" + old_id
    key.key_material = base64.b64decode(saved["material"])
    backend.keys[old_id] = key
    return old_id
