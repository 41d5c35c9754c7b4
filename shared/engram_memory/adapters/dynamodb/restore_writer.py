"""Staging and committing a restore into an empty workspace (docs/backup.md, "Restore").

The restore fence is the target's journal HEAD item, created at cursor 0 with the bundle's
digest and the verifier's state: an agent's write meets a head it cannot move (its commit
expects no head at all), so nothing else writes while a restore is staged. Staged records
carry ``recorded_cursor = 1``; every read checks ``recorded_cursor <= head``, so they stay
invisible to get and search until ONE transaction moves the head to the restore event at
cursor 1. Before that transaction a restore resumes (same bundle) or rolls back (every
staged item deleted); after it the workspace is whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.errors import error_code, translate_commit, translate_read
from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import RateLimited, RestoreRefused
from engram_memory.domain.journal import GENESIS_DIGEST, JournalEvent
from engram_memory.domain.lifecycle import State

RESTORED_CURSOR = 1
"""The cursor of the restore event, and of every record it restores."""
_BATCH = 25


@dataclass(frozen=True, slots=True)
class RestoreProgress:
    """A staged restore as its fence item holds it."""

    bundle_digest: str
    offset: int
    verifier: dict[str, Any]
    forgotten: frozenset[str]
    skipped: frozenset[str]
    restored: int


class DynamoRestoreWriter:
    """Writes a restore into the main table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def _call(self, name: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return dict(getattr(self._client, name)(**kwargs))
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc

    def progress(self, scope: Scope) -> RestoreProgress | None:
        """The restore staged in ``scope``, if its head is a restore fence."""
        item = self._call("get_item", TableName=self._table, ConsistentRead=True,
                          Key=it.key(it.journal_pk(scope), it.HEAD_SK)).get("Item")
        if item is None or "restore_digest" not in item:
            return None
        return RestoreProgress(
            bundle_digest=it.text(item, "restore_digest"),
            offset=it.number(item, "restore_offset"),
            verifier=json.loads(it.text(item, "restore_verifier")),
            forgotten=frozenset(item.get("restore_forgotten", {}).get("SS", [])),
            skipped=frozenset(item.get("restore_skipped", {}).get("SS", [])),
            restored=it.number(item, "restore_count"))

    def begin(self, scope: Scope, bundle_digest: str, verifier: Mapping[str, Any],
              forgotten: Iterable[str]) -> None:
        """Put the fence (only where no head exists); RESTORE_REFUSED otherwise."""
        item = {**it.key(it.journal_pk(scope), it.HEAD_SK), "cursor": it.n(0),
                "event_digest": it.s(GENESIS_DIGEST), "restore_digest": it.s(bundle_digest),
                "restore_offset": it.n(0), "restore_count": it.n(0),
                "restore_verifier": it.json_s(verifier)}
        ids = sorted(set(forgotten))
        if ids:
            item["restore_forgotten"] = {"SS": ids}
        try:
            self._client.put_item(TableName=self._table, Item=item,
                                  ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                raise RestoreRefused from None
            raise translate_read(exc) from exc
        except BotoCoreError as exc:
            raise translate_read(exc) from exc

    def advance(self, scope: Scope, progress: RestoreProgress, offset: int,
                verifier: Mapping[str, Any], skipped: Iterable[str], restored: int) -> None:
        """Record that lines up to ``offset`` are staged (fenced on the previous offset)."""
        values: dict[str, Any] = {":old": it.n(progress.offset), ":new": it.n(offset),
                                  ":v": it.json_s(verifier), ":d": it.s(progress.bundle_digest),
                                  ":c": it.n(restored)}
        update = "SET restore_offset = :new, restore_verifier = :v, restore_count = :c"
        ids = sorted(set(skipped))
        if ids:
            update += " ADD restore_skipped :skipped"
            values[":skipped"] = {"SS": ids}
        try:
            self._client.update_item(
                TableName=self._table, Key=it.key(it.journal_pk(scope), it.HEAD_SK),
                UpdateExpression=update,
                ConditionExpression="restore_digest = :d AND restore_offset = :old",
                ExpressionAttributeValues=values)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                raise RestoreRefused from None
            raise translate_read(exc) from exc
        except BotoCoreError as exc:
            raise translate_read(exc) from exc

    def source_forgotten(self, source: Scope, record_ids: list[str]) -> set[str]:
        """Of ``record_ids``, those tombstoned in ``source`` (on this deployment) now."""
        found: set[str] = set()
        for start in range(0, len(record_ids), 100):
            keys = [it.key(it.scope_pk(source), it.record_sk(rid))
                    for rid in record_ids[start:start + 100]]
            request: dict[str, Any] = {self._table: {
                "Keys": keys, "ConsistentRead": True,
                "ProjectionExpression": "record_id, #state",
                "ExpressionAttributeNames": {"#state": "state"}}}
            for _ in range(8):
                answer = self._call("batch_get_item", RequestItems=request)
                for item in answer.get("Responses", {}).get(self._table, []):
                    if it.text(item, "state") == State.TOMBSTONED.value:
                        found.add(it.text(item, "record_id"))
                request = answer.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(0.05)
            else:
                raise RateLimited
        return found

    def stage(self, scope: Scope, records: Sequence[Mapping[str, Any]],
              guards: Sequence[Mapping[str, Any]]) -> None:
        """Put the staged record items (and parts, expiry entries) and tombstone guards."""
        puts: list[dict[str, Any]] = []
        for entry in records:
            puts.extend(record_items(scope, entry))
        for guard in guards:
            puts.append({**it.key(it.scope_pk(scope), it.tombstone_sk(guard["payload_digest"])),
                         "record_id": it.s(str(guard["record_id"])),
                         "cursor": it.n(RESTORED_CURSOR)})
        self._batch([{"PutRequest": {"Item": item}} for item in puts])

    def _batch(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), _BATCH):
            pending: dict[str, Any] = {self._table: requests[start:start + _BATCH]}
            for _ in range(8):
                answer = self._call("batch_write_item", RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
                if not pending:
                    break
                time.sleep(0.05)
            else:
                raise RateLimited

    def commit(self, scope: Scope, bundle_digest: str, event: JournalEvent) -> None:
        """ONE transaction: the fence becomes the head at the restore event (cursor 1)."""
        head = {"Update": {
            "TableName": self._table, "Key": it.key(it.journal_pk(scope), it.HEAD_SK),
            "UpdateExpression": "SET #cursor = :one, event_digest = :digest REMOVE "
                                "restore_digest, restore_offset, restore_verifier, "
                                "restore_forgotten, restore_skipped, restore_count",
            "ConditionExpression": "#cursor = :zero AND restore_digest = :bundle",
            "ExpressionAttributeNames": {"#cursor": "cursor"},
            "ExpressionAttributeValues": {":one": it.n(event.cursor), ":zero": it.n(0),
                                          ":digest": it.s(event.event_digest),
                                          ":bundle": it.s(bundle_digest)}}}
        put = {"Put": {"TableName": self._table, "ConditionExpression": "attribute_not_exists(pk)",
                       "Item": {**it.key(it.journal_pk(scope), it.event_sk(event.cursor)),
                                "event": it.s(event.to_json()),
                                "event_digest": it.s(event.event_digest),
                                "previous_event_digest": it.s(GENESIS_DIGEST),
                                "cursor": it.n(event.cursor)}}}
        try:
            self._client.transact_write_items(TransactItems=[head, put])
        except (ClientError, BotoCoreError) as exc:
            if isinstance(exc, ClientError) and error_code(exc) == "TransactionCanceledException":
                raise RestoreRefused from exc  # the fence moved: another restore or a rollback
            raise translate_commit(exc, [it.ElementKind.HEAD, it.ElementKind.HEAD]) from exc

    def roll_back(self, scope: Scope) -> None:
        """Delete everything staged in ``scope`` and the fence (the workspace is empty again)."""
        for pk in (it.scope_pk(scope), it.expiry_pk(scope)):
            after: dict[str, Any] | None = None
            while True:
                kwargs: dict[str, Any] = {
                    "TableName": self._table, "ConsistentRead": True,
                    "KeyConditionExpression": "pk = :pk", "ProjectionExpression": "pk, sk",
                    "ExpressionAttributeValues": {":pk": it.s(pk)}}
                if after is not None:
                    kwargs["ExclusiveStartKey"] = after
                page = self._call("query", **kwargs)
                self._batch([{"DeleteRequest": {"Key": it.key(it.text(item, "pk"),
                                                              it.text(item, "sk"))}}
                             for item in page.get("Items", [])])
                after = page.get("LastEvaluatedKey")
                if after is None:
                    break
        self._call("delete_item", TableName=self._table,
                   Key=it.key(it.journal_pk(scope), it.HEAD_SK),
                   ConditionExpression="attribute_exists(restore_digest)")


def record_items(scope: Scope, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The main-table items of one restored record (record, parts, expiry entry)."""
    pk, record_id = it.scope_pk(scope), str(entry["record_id"])
    view = dict(entry["record"])
    state = str(entry["state"])
    trust = dict(entry["trust_binding"])
    item: dict[str, Any] = {
        **it.key(pk, it.record_sk(record_id)),
        "record_id": it.s(record_id), "state": it.s(state),
        "record_digest": it.s(str(entry["record_digest"])),
        "payload_digest": it.s(str(entry["payload_digest"])),
        "valid_t": it.n(int(entry["valid_t"])), "recorded_cursor": it.n(RESTORED_CURSOR),
        "recorded_at_ms": it.n(int(entry["recorded_at_ms"])),
        "restored_from_cursor": it.n(int(entry["recorded_cursor"])),
        "trust_binding": it.json_s(trust), "trust_class": it.s(str(trust["trust_class"])),
    }
    if isinstance(view.get("purpose_ref"), str):
        item["purpose_ref"] = it.s(view["purpose_ref"])
    if "valid_t_end" in entry:
        item["valid_t_end"] = it.n(int(entry["valid_t_end"]))
    items: list[dict[str, Any]] = []
    expires = entry.get("expires_at_ms")
    if expires is not None:
        item["expires_at_ms"] = it.n(int(expires))
        if state != State.EXPIRED.value:
            rule = str(view.get("retention", {}).get("derivative_rule", "make-ineligible"))
            items.append({**it.key(it.expiry_pk(scope), it.expiry_sk(int(expires), record_id)),
                          "record_id": it.s(record_id), "expires_at_ms": it.n(int(expires)),
                          "derivative_rule": it.s(rule)})
    if state == State.EXPIRED.value:
        item["expired_cursor"] = it.n(RESTORED_CURSOR)
        item["expired_at_ms"] = it.n(int(entry.get("expired_at_ms", 0)))
        item["projection_invalidation"] = it.s("pending")
    body = canonical_json(view)
    pieces = [] if len(body) <= it.INLINE_RECORD_BYTES else it.chunks(body)
    if pieces:
        item["record_parts"] = it.n(len(pieces))
    else:
        item["record_json"] = it.s(body.decode("utf-8"))
    items.append(item)
    items.extend({**it.key(pk, it.part_sk(record_id, index)), "part": it.b(piece)}
                 for index, piece in enumerate(pieces))
    return items
