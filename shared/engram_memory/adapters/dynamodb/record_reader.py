"""Read-path access to canonical state in the main table (layout: docs/storage.md).

Reads are strongly consistent: a record forgotten a millisecond ago must already be
ineligible for search and get. Record items are ``REC#{record_id}`` under the scope's
partition; a large record's JSON continues in ``REC#{record_id}#PART#{n:04d}`` items.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, condition_failed, translate
from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.projection_store import call_translated
from engram_memory.domain.errors import BlobMissing, StoreUnavailable
from engram_memory.services.ports.read import (
    ACCEPTED_CURRENT,
    INVALIDATION_COMPLETE,
    JournalChange,
    RecordRow,
)

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

_BATCH_GET = 100
_MAX_ATTEMPTS = 8


class DynamoRecordReader:
    """:class:`~engram_memory.services.ports.read.RecordReader` on the main table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def head_cursor(self, scope: Scope) -> int:
        """The journal head cursor of the scope (0 before the first event)."""
        response = self._call(
            "get_item",
            TableName=self._table,
            Key={"pk": {"S": f"JOURNAL#{scope.key}"}, "sk": {"S": "HEAD"}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return (it.optional_number(item, "cursor") or 0) if item else 0

    def journal_changes(self, scope: Scope, after: int, through: int) -> list[JournalChange]:
        """Events ``after < cursor <= through`` (one consistent Query, paged past 1 MB).

        Event bodies hold ids, states and digests only, never content.
        """
        if through <= after:
            return []
        request: dict[str, Any] = {
            "TableName": self._table,
            "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": {"S": f"JOURNAL#{scope.key}"},
                ":first": {"S": f"EV#{after + 1:020d}"},
                ":last": {"S": f"EV#{through:020d}"},
            },
            "ProjectionExpression": "#ev",
            "ExpressionAttributeNames": {"#ev": "event"},
        }
        changes: list[JournalChange] = []
        while True:
            page = self._call("query", **request)
            for item in page.get("Items", []):
                body = json.loads(item["event"]["S"])
                record_id = body.get("subject", {}).get("record_id")
                changes.append(JournalChange(int(body["cursor"]),
                                             record_id if isinstance(record_id, str) else None))
            last = page.get("LastEvaluatedKey")
            if not last:
                return changes
            request["ExclusiveStartKey"] = last

    def get_record(self, scope: Scope, record_id: str) -> RecordRow | None:
        """One record item, or None."""
        return self.get_records(scope, [record_id]).get(record_id)

    def get_visible_record(self, scope: Scope, record_id: str,
                           purpose: str | None) -> RecordRow | None:
        """One consistent Query of the record's key, filtered to ``accepted_current`` and
        ``purpose`` inside DynamoDB: another purpose's record is answered like an unknown id
        (an empty page: nothing returned, parsed or read from parts). Items written before
        the ``purpose_ref`` attribute pass the filter and are judged by the caller."""
        values: dict[str, Any] = {
            ":pk": {"S": f"SCOPE#{scope.key}"}, ":sk": {"S": f"REC#{record_id}"},
            ":current": {"S": ACCEPTED_CURRENT}}
        condition = "#state = :current"
        if purpose is not None:
            condition += " AND (purpose_ref = :purpose OR attribute_not_exists(purpose_ref))"
            values[":purpose"] = {"S": purpose}
        page = self._call("query", TableName=self._table, ConsistentRead=True,
                          KeyConditionExpression="pk = :pk AND sk = :sk",
                          FilterExpression=condition,
                          ExpressionAttributeNames={"#state": "state"},
                          ExpressionAttributeValues=values)
        items = page.get("Items", [])
        return self._row(scope, items[0]) if items else None

    def get_records(self, scope: Scope, record_ids: Sequence[str],
                    consistent: bool = True) -> dict[str, RecordRow]:
        """Record items by id via BatchGetItem, unprocessed keys retried (``consistent``
        False: eventually consistent reads, at half the read units; a large record whose
        parts are not all read yet is left out)."""
        rows: dict[str, RecordRow] = {}
        ids = list(dict.fromkeys(record_ids))
        for start in range(0, len(ids), _BATCH_GET):
            keys = [
                {"pk": {"S": f"SCOPE#{scope.key}"}, "sk": {"S": f"REC#{rid}"}}
                for rid in ids[start:start + _BATCH_GET]
            ]
            for item in self._batch_get(keys, consistent):
                row = self._row(scope, item, consistent)
                if row is not None:
                    rows[row.record_id] = row
        return rows

    def mark_projection_complete(self, scope: Scope, record_id: str) -> None:
        """``projection_invalidation = complete`` unless the item is gone or already so."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": f"SCOPE#{scope.key}"}, "sk": {"S": f"REC#{record_id}"}},
                UpdateExpression="SET projection_invalidation = :complete",
                ConditionExpression=(
                    "attribute_exists(pk) AND (attribute_not_exists(projection_invalidation)"
                    " OR projection_invalidation <> :complete)"
                ),
                ExpressionAttributeValues={":complete": {"S": INVALIDATION_COMPLETE}},
            )
        except AWS_FAILURES as exc:
            if condition_failed(exc):
                return
            raise translate(exc) from exc

    def _row(self, scope: Scope, item: dict[str, Any],
             consistent: bool = True) -> RecordRow | None:
        record_id = item["sk"]["S"].removeprefix("REC#")
        text = it.optional_text(item, "record_json")
        parts = it.optional_number(item, "record_parts") or 0
        if text is None and parts:
            text = self._parts(scope, record_id, parts, consistent)
            if text is None:
                if consistent:  # an eventually consistent read may just not see them yet
                    self._check_part_loss(scope, item)
                return None  # forgotten or expired between the reads: not eligible
        return RecordRow(
            record_id=record_id,
            state=it.optional_text(item, "state") or "",
            record=json.loads(text) if text else None,
            record_digest=it.optional_text(item, "record_digest") or "",
            payload_digest=it.optional_text(item, "payload_digest") or "",
            parts=parts,
            valid_t=it.optional_number(item, "valid_t") or 0,
            valid_t_end=it.optional_number(item, "valid_t_end"),
            expires_at_ms=it.optional_number(item, "expires_at_ms"),
            recorded_cursor=it.optional_number(item, "recorded_cursor") or 0,
            projection_invalidation=it.optional_text(item, "projection_invalidation"),
        )

    def _check_part_loss(self, scope: Scope, item: dict[str, Any]) -> None:
        """A part vanished: fine if the head moved on (a forget raced us), else BlobMissing."""
        fresh = self._call("get_item", TableName=self._table, ConsistentRead=True,
                           Key={"pk": {"S": f"SCOPE#{scope.key}"}, "sk": item["sk"]}).get("Item")
        same = ("state", "record_parts")
        if fresh is not None and all(fresh.get(name) == item.get(name) for name in same):
            raise BlobMissing  # the head still names a part that is gone

    def _parts(self, scope: Scope, record_id: str, parts: int,
               consistent: bool = True) -> str | None:
        """A large record's JSON from its ``REC#{id}#PART#{n:04d}`` items; None if one is gone."""
        keys = [
            {"pk": {"S": f"SCOPE#{scope.key}"}, "sk": {"S": f"REC#{record_id}#PART#{n:04d}"}}
            for n in range(parts)
        ]
        by_key = {item["sk"]["S"]: item for item in self._batch_get(keys, consistent)}
        pieces: list[bytes] = []
        for key in keys:
            item = by_key.get(key["sk"]["S"])
            if item is None:
                return None
            pieces.append(bytes(item["part"]["B"]))
        return b"".join(pieces).decode("utf-8")

    def _batch_get(self, keys: list[dict[str, Any]],
                   consistent: bool = True) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": consistent}}
        for attempt in range(_MAX_ATTEMPTS):
            response = self._call("batch_get_item", RequestItems=request)
            items.extend(response.get("Responses", {}).get(self._table, []))
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return items
            # Unprocessed keys mean throttling or a 16 MB response: back off, ask again.
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise StoreUnavailable

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        return call_translated(self._client, operation, **kwargs)
