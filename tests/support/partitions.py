"""Which DynamoDB partitions a piece of code touches, read off its requests' parameters.

IAM's ``dynamodb:LeadingKeys`` sees the partition key of every item a request names (each
element of a transaction or batch, a Query's partition); so does this. The partition-fence
tests compare what the real code touches with the fences the stack grants
(infra/names.py).
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_ITEM_CALLS = {"GetItem", "PutItem", "UpdateItem", "DeleteItem"}


def _pk(key: dict[str, Any]) -> str:
    return str(key["pk"]["S"])


def _query_partition(params: dict[str, Any]) -> str:
    names = params.get("ExpressionAttributeNames", {})
    for left, value in re.findall(r"(#?\w+)\s*=\s*(:\w+)", params["KeyConditionExpression"]):
        if names.get(left, left) == "pk":
            return str(params["ExpressionAttributeValues"][value]["S"])
    raise AssertionError("a Query without an equality on pk")


def item_partitions(operation: str, params: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(table, partition key) of every item one DynamoDB request names."""
    if operation in _ITEM_CALLS:
        yield params["TableName"], _pk(params.get("Key") or params["Item"])
    elif operation == "BatchGetItem":
        for table, request in params["RequestItems"].items():
            for key in request["Keys"]:
                yield table, _pk(key)
    elif operation == "BatchWriteItem":
        for table, requests in params["RequestItems"].items():
            for request in requests:
                put = request.get("PutRequest")
                yield table, _pk(put["Item"] if put else request["DeleteRequest"]["Key"])
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        for element in params["TransactItems"]:
            (body,) = element.values()
            yield body["TableName"], _pk(body.get("Key") or body["Item"])
    elif operation == "Query":
        yield params["TableName"], _query_partition(params)
    else:
        # A Scan (or anything new) names no partition: no LeadingKeys fence bounds it.
        yield params.get("TableName", "?"), f"<unfenced {operation}>"


@dataclass
class PartitionLog:
    """Partition keys touched per (function, table role) while a function is acting."""

    tables: dict[str, str]
    acting: str | None = None
    touched: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))

    def attach(self, client: Any) -> PartitionLog:
        """Hook the wired DynamoDB client (every adapter of this process shares it)."""
        client.meta.events.register("before-parameter-build.dynamodb", self._record,
                                    unique_id="partition-log")
        return self

    @contextmanager
    def as_function(self, name: str) -> Iterator[None]:
        """Attribute the requests made inside the block to ``name``."""
        self.acting = name
        try:
            yield
        finally:
            self.acting = None

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if self.acting is None:
            return
        for table, pk in item_partitions(model.name, params):
            self.touched[(self.acting, self.tables.get(table, table))].add(pk)

    def functions(self) -> set[str]:
        """The functions that touched anything."""
        return {function for function, _ in self.touched}


def families_used(partitions: set[str], fence: tuple[str, ...]) -> set[str]:
    """The fence's patterns the partitions use (asserting none lies outside the fence)."""
    outside = {pk for pk in partitions
               if not any(fnmatch.fnmatchcase(pk, pattern) for pattern in fence)}
    assert not outside, f"outside the fence {fence}: {sorted(outside)}"
    return {pattern for pattern in fence
            if any(fnmatch.fnmatchcase(pk, pattern) for pk in partitions)}
