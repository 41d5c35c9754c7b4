"""Every scope of the main table (its journal head items), for rebuilding the projection.

A paginated, keys-only Scan filtered to ``JOURNAL#{t}#{w}`` / ``HEAD`` items. It is an
operator's tool (``engram-memory reindex``, the local service after a tokenizer change),
never on a request path: no tool function is granted Scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate
from engram_memory.domain.context import Scope

_JOURNAL = "JOURNAL#"
_HEAD = "HEAD"


class DynamoScopes:
    """:class:`~engram_memory.services.reindex.ScopeSource` on the main table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def scopes(self) -> Iterator[Scope]:
        """Each scope that has a journal (every scope that ever committed a change)."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "ProjectionExpression": "pk, sk",
            "FilterExpression": "begins_with(pk, :journal) AND sk = :head",
            "ExpressionAttributeValues": {":journal": {"S": _JOURNAL}, ":head": {"S": _HEAD}},
            "ConsistentRead": True,
        }
        while True:
            try:
                page = self._client.scan(**request)
            except AWS_FAILURES as exc:
                raise translate(exc) from exc
            for item in page.get("Items", []):
                parts = item["pk"]["S"].split("#")
                if len(parts) == 3 and all(parts[1:]):
                    yield Scope(parts[1], parts[2])
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last
