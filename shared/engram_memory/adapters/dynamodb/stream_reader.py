"""Reads the main table's DynamoDB stream and yields records in the Lambda event shape.

Used by the local projector pump (the in-process stand-in for the Lambda event source
mapping). On moto, ``AWS_ACCOUNT_ID_ENDPOINT_MODE=disabled`` must be set.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING:
    from engram_memory.settings import Settings

Position = tuple[str, str]
"""(ShardIteratorType, SequenceNumber): where the next read of a shard starts."""


def lambda_value(value: Any) -> Any:
    """boto3's parsed stream record → the JSON a Lambda event carries (bytes → base64)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, dict):
        return {k: lambda_value(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [lambda_value(v) for v in value]
    return value


class DynamoStreamReader:
    """Shard discovery and GetRecords over one table's latest stream."""

    def __init__(self, dynamodb_client: Any, streams_client: Any, table_name: str) -> None:
        self._dynamodb = dynamodb_client
        self._streams = streams_client
        self._table = table_name

    @classmethod
    def from_settings(cls, settings: Settings) -> DynamoStreamReader:
        """A reader of the main table's stream, with clients for the settings' endpoint."""
        kwargs = {"region_name": settings.region, "endpoint_url": settings.endpoint_url}
        return cls(boto3.client("dynamodb", **kwargs),  # type: ignore[call-overload]
                   boto3.client("dynamodbstreams", **kwargs),  # type: ignore[call-overload]
                   settings.table_name)

    def stream_arn(self) -> str | None:
        """The table's latest stream ARN (None when it has no stream)."""
        table = self._dynamodb.describe_table(TableName=self._table)["Table"]
        arn = table.get("LatestStreamArn")
        return str(arn) if arn else None

    def shard_ids(self, stream_arn: str) -> list[str]:
        """Every shard of the stream."""
        description = self._streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]
        return [str(shard["ShardId"]) for shard in description["Shards"]]

    def read(self, stream_arn: str, shard_id: str, position: Position | None,
             limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` records from ``position`` (start of the shard when None)."""
        kwargs: dict[str, Any] = {"StreamArn": stream_arn, "ShardId": shard_id}
        if position is None:
            kwargs["ShardIteratorType"] = "TRIM_HORIZON"
        else:
            kwargs["ShardIteratorType"], kwargs["SequenceNumber"] = position
        iterator = self._streams.get_shard_iterator(**kwargs)["ShardIterator"]
        records = self._streams.get_records(ShardIterator=iterator, Limit=limit)["Records"]
        return [{**lambda_value(r), "eventSourceARN": stream_arn} for r in records]
