"""Pages of one workspace's records, tombstone guards and journal as of one cursor.

Read by the export route (docs/backup.md). Every query is strongly consistent; what was
committed after the pinned cursor is left out (a record admitted later, a guard written
later, an event past the cursor), so the pages of one export describe one journal position
even while writes continue. Content that a later forget or expiry removed is gone from the
table and therefore from the bundle: a forgotten record is never exported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.errors import translate_read
from engram_memory.domain.context import Scope
from engram_memory.domain.journal import JournalHead
from engram_memory.domain.lifecycle import State


@dataclass(frozen=True, slots=True)
class ExportPage:
    """Entries of one part and the sort key to continue after (None: the part is done)."""

    entries: list[dict[str, Any]]
    last_sk: str | None


class DynamoExportReader:
    """Reads a workspace's exportable items from the main table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def _query(self, **kwargs: Any) -> dict[str, Any]:
        try:
            return dict(self._client.query(TableName=self._table, ConsistentRead=True, **kwargs))
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        try:
            found = self._client.get_item(TableName=self._table, Key=it.key(pk, sk),
                                          ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc
        item = found.get("Item")
        return None if item is None else dict(item)

    def head(self, scope: Scope) -> JournalHead:
        """The workspace's journal head now."""
        item = self._get(it.journal_pk(scope), it.HEAD_SK)
        if item is None:
            return JournalHead()
        return JournalHead(cursor=it.number(item, "cursor"),
                           event_digest=it.text(item, "event_digest"))

    def is_empty(self, scope: Scope) -> bool:
        """True when the workspace has no journal, no candidate, record or guard."""
        if self.head(scope).cursor:
            return False
        page = self._query(KeyConditionExpression="pk = :pk",
                           ExpressionAttributeValues={":pk": it.s(it.scope_pk(scope))},
                           Limit=1, ProjectionExpression="pk")
        return not page.get("Items")

    def _page(self, pk: str, prefix: str, limit: int, after: str | None,
              **extra: Any) -> tuple[list[dict[str, Any]], str | None]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": it.s(pk), ":prefix": it.s(prefix)},
            "Limit": limit, **extra,
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = it.key(pk, after)
        page = self._query(**kwargs)
        last = page.get("LastEvaluatedKey")
        return list(page.get("Items", [])), None if last is None else it.text(last, "sk")

    def records(self, scope: Scope, at: int, limit: int, after: str | None) -> ExportPage:
        """Records admitted by ``at`` that still hold content, as bundle entries."""
        items, last = self._page(it.scope_pk(scope), "REC#", limit, after,
                                 FilterExpression="attribute_exists(record_id)")
        entries = [entry for item in items
                   if (entry := self._record_entry(scope, item, at)) is not None]
        return ExportPage(entries, last)

    def _record_entry(self, scope: Scope, item: Mapping[str, Any],
                      at: int) -> dict[str, Any] | None:
        if it.number(item, "recorded_cursor") > at:
            return None
        view = self._content(scope, item)
        if view is None:
            return None  # forgotten, or expired without retain: nothing to carry
        state = it.text(item, "state")
        expired_cursor = it.optional_number(item, "expired_cursor")
        if state == State.EXPIRED.value and expired_cursor is not None and expired_cursor > at:
            # Expiry is the only move from accepted_current a record makes today (no tool
            # disputes or supersedes), so at the pinned cursor it was still current.
            state = State.ACCEPTED_CURRENT.value
        entry: dict[str, Any] = {
            "record_id": it.text(item, "record_id"),
            "record_digest": it.text(item, "record_digest"),
            "payload_digest": it.text(item, "payload_digest"),
            "state": state, "record": view,
            "valid_t": it.number(item, "valid_t"),
            "recorded_cursor": it.number(item, "recorded_cursor"),
            "recorded_at_ms": it.number(item, "recorded_at_ms"),
            "trust_binding": json.loads(it.text(item, "trust_binding")),
        }
        for name in ("valid_t_end", "expires_at_ms"):
            value = it.optional_number(item, name)
            if value is not None:
                entry[name] = value
        if state == State.EXPIRED.value and expired_cursor is not None:
            entry["expired_cursor"] = expired_cursor
            entry["expired_at_ms"] = it.number(item, "expired_at_ms")
        return entry

    def _content(self, scope: Scope, item: Mapping[str, Any]) -> dict[str, Any] | None:
        if "record_json" in item:
            return dict(json.loads(it.text(item, "record_json")))
        parts = it.number(item, "record_parts")
        if not parts:
            return None
        record_id = it.text(item, "record_id")
        pieces = []
        for index in range(parts):
            part = self._get(it.scope_pk(scope), it.part_sk(record_id, index))
            if part is None:
                return None  # forgotten between the two reads
            pieces.append(bytes(part["part"]["B"]))
        return dict(json.loads(b"".join(pieces)))

    def tombstones(self, scope: Scope, at: int, since: int, limit: int,
                   after: str | None) -> ExportPage:
        """Guards written in ``since < cursor <= at``: digests and cursors only."""
        items, last = self._page(it.scope_pk(scope), "TOMB#", limit, after)
        entries = []
        for item in items:
            cursor = it.number(item, "cursor")
            if since < cursor <= at:
                entries.append({"payload_digest": it.text(item, "sk").removeprefix("TOMB#"),
                                "record_id": it.text(item, "record_id"), "cursor": cursor})
        return ExportPage(entries, last)

    def journal(self, scope: Scope, at: int, limit: int, after: str | None) -> ExportPage:
        """Events with cursor <= ``at``, as stored (body and digest)."""
        items, last = self._page(it.journal_pk(scope), "EV#", limit, after)
        entries: list[dict[str, Any]] = []
        for item in items:
            if it.number(item, "cursor") > at:
                return ExportPage(entries, None)
            entries.append({"event": json.loads(it.text(item, "event")),
                            "event_digest": it.text(item, "event_digest")})
        return ExportPage(entries, last)

    def record_ids_forgotten(self, scope: Scope, record_ids: Iterator[str]) -> list[str]:
        """Of ``record_ids``, those tombstoned in ``scope`` now."""
        forgotten = []
        for record_id in record_ids:
            item = self._get(it.scope_pk(scope), it.record_sk(record_id))
            if item is not None and it.text(item, "state") == State.TOMBSTONED.value:
                forgotten.append(record_id)
        return forgotten
