"""The forget ledger table: one content-free item per forget and withdrawal.

Item: pk ``LEDGER#{tenant}#{workspace}``, sk ``EV#{cursor:020d}`` (one per journal cursor:
only the commit that wins the head writes it), the operation, the subject, the cursor, the
instant and the event's digests. Written by the store inside the move's TransactWriteItems
(:func:`ledger_element`); read by the reapplication after a restore
(:class:`DynamoForgetLedger`, docs/forget-ledger.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb import items as it
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import RestoreRefused
from engram_memory.services.ports import LedgerEntry
from engram_memory.services.reapply_forgets import LedgerRecord

LEDGER_PREFIX = "LEDGER#"


def ledger_pk(scope: Scope) -> str:
    """The ledger partition of a scope."""
    return f"{LEDGER_PREFIX}{scope.tenant_id}#{scope.workspace_id}"


def ledger_element(entry: LedgerEntry, scope: Scope, table: str) -> it.Element:
    """The Put of ``entry`` in a commit (a state element: it has no condition)."""
    item = {
        **it.key(ledger_pk(scope), f"EV#{entry.cursor:020d}"),
        "operation": it.s(entry.operation), "subject_key": it.s(entry.subject_key),
        "target_id": it.s(entry.target_id), "cursor": it.n(entry.cursor),
        "at_ms": it.n(entry.at_ms), "digests": it.json_s(dict(entry.digests)),
    }
    return it.ElementKind.STATE, {"Put": {"TableName": table, "Item": item}}


def _record(item: dict[str, Any]) -> LedgerRecord | None:
    parts = it.text(item, "pk").split("#")
    if len(parts) != 3 or not all(parts[1:]):
        return None
    digests = json.loads(it.text(item, "digests"))
    return LedgerRecord(Scope(parts[1], parts[2]), LedgerEntry(
        operation=it.text(item, "operation"), subject_key=it.text(item, "subject_key"),
        target_id=it.text(item, "target_id"), cursor=it.number(item, "cursor"),
        at_ms=it.number(item, "at_ms"), digests={str(k): str(v) for k, v in digests.items()}))


class DynamoForgetLedger:
    """The ledger as the reapplication reads it; any failure to read is RESTORE_REFUSED."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def covered_since_ms(self) -> int:
        """The ledger table's creation instant (DescribeTable): no item write can move it."""
        try:
            table = self._client.describe_table(TableName=self._table)["Table"]
        except (ClientError, BotoCoreError) as exc:
            raise RestoreRefused from exc
        return int(table["CreationDateTime"].timestamp() * 1000)

    def entries(self, since_ms: int) -> list[LedgerRecord]:
        """Every entry at or after ``since_ms``, each scope's in cursor order."""
        return sorted(self._scan(since_ms),
                      key=lambda r: (r.scope.tenant_id, r.scope.workspace_id, r.entry.cursor))

    def _scan(self, since_ms: int) -> Iterator[LedgerRecord]:
        request: dict[str, Any] = {
            "TableName": self._table, "ConsistentRead": True,
            "FilterExpression": "begins_with(pk, :ledger) AND at_ms >= :since",
            "ExpressionAttributeValues": {":ledger": it.s(LEDGER_PREFIX),
                                          ":since": it.n(since_ms)},
        }
        while True:
            try:
                page = self._client.scan(**request)
            except (ClientError, BotoCoreError) as exc:
                raise RestoreRefused from exc
            for item in page.get("Items", []):
                record = _record(item)
                if record is None:
                    raise RestoreRefused
                yield record
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last
