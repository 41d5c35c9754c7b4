"""Local mode only: boto3 clients for the moto server, and what moto has no API for.

moto keeps everything in memory, so ``engram-memory serve --data-dir`` saves what a
restart must keep: every item of the three tables, the tenant KMS key's id and material,
and the vectors. They are read from and written back to moto's backends in the process
that runs moto (``moto_backends``: this one, or the local service's moto process): no KMS API
exports key material, and moto answers a paginated Scan by walking the table from its
start for every page (O(n²): 10 s for 30,000 items, over a minute for a store of 1,400
documents), while its backend lists a table in one pass. Items are written back through
moto's own ``put_item`` (what its API handler calls), so the stream sees them as it would.
On the next start the key is put back under its old id, so the wrapped data keys stored
in the tables still unwrap. Never used in AWS.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(connect_timeout=2, read_timeout=30, retries={"max_attempts": 3})


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


def dump_tables(account_id: str, region: str, table_names: Iterable[str]
                ) -> dict[str, list[Any]]:
    """Every item of each table, JSON-safe (in the DynamoDB API's attribute-value form)."""
    backend = _dynamodb_backend(account_id, region)
    return {name: [_encode(item.to_json()["Attributes"])
                   for item in backend.get_table(name).all_items()]
            for name in table_names}


def load_tables(account_id: str, region: str, dump: dict[str, list[Any]]) -> int:
    """Write the dumped items back (tables must exist); the number of items written."""
    backend = _dynamodb_backend(account_id, region)
    written = 0
    for name, items in dump.items():
        for item in items:
            backend.put_item(name, _decode(item))
            written += 1
    return written


def _dynamodb_backend(account_id: str, region: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends  # local mode only: moto runs in this process

    return dynamodb_backends[account_id][region]


def _kms_backend(account_id: str, region: str) -> Any:
    from moto.kms.models import kms_backends  # local mode only: moto runs in this process

    return kms_backends[account_id][region]


def export_kms_key(account_id: str, region: str, key_id: str) -> dict[str, str]:
    """The id and material of a moto KMS key (local snapshot only)."""
    key_id = key_id.rsplit("/", 1)[-1]  # the template gives functions the key's ARN
    key = _kms_backend(account_id, region).keys[key_id]
    return {"key_id": key_id, "material": base64.b64encode(key.key_material).decode("ascii")}


def restore_kms_key(account_id: str, region: str, saved: dict[str, str], fresh_key_id: str) -> str:
    """Re-home the freshly created key under the saved id and material; its new ARN."""
    backend = _kms_backend(account_id, region)
    key = backend.keys.pop(fresh_key_id.rsplit("/", 1)[-1])
    old_id = saved["key_id"]
    key.id = old_id
    key.arn = key.arn.rsplit("/", 1)[0] + "/" + old_id
    key.key_material = base64.b64decode(saved["material"])
    backend.keys[old_id] = key
    return str(key.arn)


def write_items(account_id: str, region: str,
                request_items: dict[str, list[dict[str, Any]]]) -> None:
    """A BatchWriteItem's puts and deletes, straight into moto's tables (bench loads)."""
    backend = _dynamodb_backend(account_id, region)
    for table, requests in request_items.items():
        for request in requests:
            if "DeleteRequest" in request:
                backend.delete_item(table, request["DeleteRequest"]["Key"])
            else:
                backend.put_item(table, request["PutRequest"]["Item"])


def stored_vectors(account_id: str, bucket: str, index: str, region: str) -> dict[str, Any]:
    """moto's vectors of one index, by key."""
    from moto.s3vectors.models import s3vectors_backends
    from moto.utilities.utils import get_partition

    # moto keeps one S3 Vectors backend per partition ("aws"), not per region.
    backend = s3vectors_backends[account_id][get_partition(region)]
    vectors: dict[str, Any] = backend.get_index(bucket, index_name=index, index_arn="").vectors
    return vectors


def export_vectors(account_id: str, region: str, bucket: str, index: str) -> list[Any]:
    """Every vector of the local index (the --data-dir snapshot keeps them)."""
    if not bucket or not index:
        return []
    return [{"key": v.key, "data": v.data, "metadata": v.metadata}
            for v in stored_vectors(account_id, bucket, index, region).values()]


def import_vectors(account_id: str, region: str, bucket: str, index: str,
                   vectors: list[Any]) -> None:
    """Put back the vectors of a snapshot (into the index ``ensure_index`` created)."""
    if not bucket or not index or not vectors:
        return
    from moto.s3vectors.models import Vector as MotoVector

    stored = stored_vectors(account_id, bucket, index, region)
    for item in vectors:
        stored[item["key"]] = MotoVector.from_dict(item)
