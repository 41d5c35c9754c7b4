"""The DynamoDB MemoryStore: consistent reads and ONE TransactWriteItems per mutation.

Element order of every commit (the cancellation reasons are read back by index):
idempotency put (absent) · journal head update (cursor = expected) · journal event put
(absent) · the consumed confirmation, when gated · the state changes (a forget's and a
withdrawal's include their forget-ledger entry, in the ledger table).
A commit the SDK had to resend (lost answer, then retried) and that then meets its own
idempotency key is reported MUTATION_OUTCOME_UNKNOWN, never as someone else's replay.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.adapters.dynamodb import items as it
from engram_memory.adapters.dynamodb.batch_reads import read_together
from engram_memory.adapters.dynamodb.confirmations import consumption_element
from engram_memory.adapters.dynamodb.errors import translate_commit, translate_read
from engram_memory.adapters.dynamodb.forget_ledger import ledger_element
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import BlobMissing, EngramError, MutationOutcomeUnknown
from engram_memory.domain.journal import JournalEvent, JournalHead
from engram_memory.services.ports import (
    CandidateEntry,
    Change,
    CommitConflict,
    ConflictKind,
    DueExpiry,
    ExpireRecord,
    IdempotencyEntry,
    LedgerEntry,
    MoveCandidate,
    MutationPlan,
    PutCandidate,
    PutRecord,
    ReadRequest,
    ReadResult,
    RecordEntry,
    TombstoneRecord,
)

_RECORD_FIELDS = "record_id, #state, record_digest, payload_digest, record_parts"


def _sdk_retried(exc: ClientError | BotoCoreError) -> bool:
    """True when botocore sent the request more than once before this answer."""
    if not isinstance(exc, ClientError):
        return False
    return int(exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0) > 0


class DynamoMemoryStore:
    """MemoryStore over the main table and the key table (and the forget ledger's)."""

    def __init__(self, client: Any, table_name: str, key_table_name: str,
                 ledger_table_name: str = "") -> None:
        self._client = client
        self._main = table_name
        self._keys = key_table_name
        self._ledger = ledger_table_name

    # --- reads --------------------------------------------------------------------------

    def _get(self, table: str, pk: str, sk: str, **kwargs: Any) -> dict[str, Any] | None:
        try:
            response = self._client.get_item(TableName=table, Key=it.key(pk, sk),
                                             ConsistentRead=True, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc
        item = response.get("Item")
        return None if item is None else dict(item)

    def get_idempotency(self, scope: Scope, principal: str, key: str) -> IdempotencyEntry | None:
        """The committed reservation of ``key`` for ``principal``, if any."""
        item = self._get(self._main, it.idempotency_pk(scope, principal), f"KEY#{key}")
        return None if item is None else it.to_idempotency(item)

    def get_candidate(self, scope: Scope, candidate_id: str) -> CandidateEntry | None:
        """A candidate's metadata in ``scope``, if any."""
        item = self._get(self._main, it.scope_pk(scope), it.candidate_sk(candidate_id))
        return None if item is None else it.to_candidate(item)

    def load_sealed(self, scope: Scope, candidate_id: str, chunks: int) -> bytes:
        """A candidate's sealed material, reassembled from its chunks."""
        pieces = []
        for index in range(chunks):
            item = self._get(self._main, it.scope_pk(scope), it.blob_sk(candidate_id, index))
            if item is None:
                raise BlobMissing
            pieces.append(bytes(item["ct"]["B"]))
        if not pieces:
            raise BlobMissing
        return b"".join(pieces)

    def get_wrapped_key(self, scope: Scope, candidate_id: str) -> bytes | None:
        """A candidate's wrapped data key, if not shredded."""
        item = self._get(self._keys, it.key_pk(scope), it.candidate_sk(candidate_id))
        return None if item is None else bytes(item["wrapped"]["B"])

    def get_record(self, scope: Scope, record_id: str) -> RecordEntry | None:
        """A record's state and digests (its content is not read)."""
        item = self._get(self._main, it.scope_pk(scope), it.record_sk(record_id),
                         ProjectionExpression=_RECORD_FIELDS,
                         ExpressionAttributeNames={"#state": "state"})
        return None if item is None else it.to_record(item)

    def has_tombstone(self, scope: Scope, payload_digest: str) -> bool:
        """True when a record with this effective payload digest was forgotten."""
        return self._get(self._main, it.scope_pk(scope), it.tombstone_sk(payload_digest),
                         ProjectionExpression="pk") is not None

    def journal_head(self, scope: Scope) -> JournalHead:
        """The scope's journal head (cursor 0 when empty)."""
        item = self._get(self._main, it.journal_pk(scope), it.HEAD_SK)
        return JournalHead() if item is None else _head_of(item)

    def read_together(self, scope: Scope, request: ReadRequest) -> ReadResult:
        """Every item ``request`` names, in one strongly consistent BatchGetItem."""
        return read_together(self._client, self._main, self._keys, scope, request)

    def journal_events(self, scope: Scope) -> list[JournalEvent]:
        """Every event of the scope, in cursor order."""
        return list(self._events(scope))

    def _events(self, scope: Scope) -> Iterator[JournalEvent]:
        kwargs: dict[str, Any] = {
            "TableName": self._main, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :ev)",
            "ExpressionAttributeValues": {":pk": it.s(it.journal_pk(scope)), ":ev": it.s("EV#")},
        }
        while True:
            try:
                page = self._client.query(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise translate_read(exc) from exc
            for item in page.get("Items", []):
                yield JournalEvent.from_json(it.text(item, "event"),
                                             it.text(item, "event_digest"))
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # --- the expiry index (docs/expiry.md) ----------------------------------------------

    def due_expiries(self, scope: Scope, now_ms: int, limit: int,
                     after: str | None = None) -> tuple[list[DueExpiry], str | None]:
        """Up to ``limit`` entries with ``expires_at_ms <= now_ms``, oldest first; next cursor."""
        kwargs: dict[str, Any] = {
            "TableName": self._main, "ConsistentRead": True, "Limit": limit,
            # Every sort key due by now sorts below the next millisecond's zero-padded prefix.
            "KeyConditionExpression": "pk = :pk AND sk < :bound",
            "ExpressionAttributeValues": {":pk": it.s(it.expiry_pk(scope)),
                                          ":bound": it.s(f"{now_ms + 1:015d}")},
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = it.key(it.expiry_pk(scope), after)
        try:
            page = self._client.query(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc
        entries = [it.to_due_expiry(item) for item in page.get("Items", [])]
        last = page.get("LastEvaluatedKey")
        return entries, None if last is None else it.text(last, "sk")

    def drop_expiry(self, scope: Scope, due: DueExpiry) -> None:
        """Delete an index entry whose record has nothing left to expire."""
        try:
            self._client.delete_item(TableName=self._main, Key=it.key(
                it.expiry_pk(scope), it.expiry_sk(due.expires_at_ms, due.record_id)))
        except (ClientError, BotoCoreError) as exc:
            raise translate_read(exc) from exc

    # --- the commit ---------------------------------------------------------------------

    def commit(self, plan: MutationPlan) -> None:
        """Apply ``plan`` as ONE TransactWriteItems."""
        elements = list(self._elements(plan))
        kinds = [kind for kind, _ in elements]
        try:
            self._client.transact_write_items(TransactItems=[body for _, body in elements])
        except (ClientError, BotoCoreError) as exc:
            error = translate_commit(exc, kinds, _head_of)
            if (isinstance(error, CommitConflict) and ConflictKind.IDEMPOTENCY in error.kinds
                    and _sdk_retried(exc)):
                # The SDK resent the commit after a lost answer: the key we now meet may be
                # our own first attempt, so a replay would mislead. Unknown; a retry tells.
                raise MutationOutcomeUnknown from exc
            raise error from exc

    def _elements(self, plan: MutationPlan) -> Iterator[it.Element]:
        scope, event = plan.scope, plan.event
        idem = {
            **it.key(it.idempotency_pk(scope, plan.principal), f"KEY#{plan.idempotency_key}"),
            "tool": it.s(plan.tool), "intent_digest": it.s(plan.intent_digest),
            "result": it.json_s(plan.result), "created_at_ms": it.n(plan.at_ms),
            "cursor": it.n(event.cursor),
        }
        yield it.ElementKind.IDEMPOTENCY, {"Put": {
            "TableName": self._main, "Item": idem,
            "ConditionExpression": "attribute_not_exists(pk)"}}
        yield it.ElementKind.HEAD, self._head_update(scope, plan.head, event)
        event_item = {
            **it.key(it.journal_pk(scope), it.event_sk(event.cursor)),
            "event": it.s(event.to_json()), "event_digest": it.s(event.event_digest),
            "previous_event_digest": it.s(str(event.body["previous_event_digest"])),
            "cursor": it.n(event.cursor),
        }
        yield it.ElementKind.HEAD, {"Put": {
            "TableName": self._main, "Item": event_item,
            "ConditionExpression": "attribute_not_exists(pk)"}}
        if plan.gate is not None:
            # Confirmation items live in the main table (adapters/dynamodb/confirmations.py).
            yield it.ElementKind.CONFIRMATION, consumption_element(self._main, plan.gate)
        for change in plan.changes:
            yield from self._change(change, plan)

    def _head_update(self, scope: Scope, head: JournalHead, event: JournalEvent) -> dict[str, Any]:
        values = {":next": it.n(event.cursor), ":digest": it.s(event.event_digest)}
        if head.cursor == 0:
            condition = "attribute_not_exists(pk)"
        else:
            condition = "#cursor = :expected"
            values[":expected"] = it.n(head.cursor)
        return {"Update": {
            "TableName": self._main, "Key": it.key(it.journal_pk(scope), it.HEAD_SK),
            "UpdateExpression": "SET #cursor = :next, event_digest = :digest",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#cursor": "cursor"},
            "ExpressionAttributeValues": values,
            # A lost race hands back the head that won: the rebuild needs no re-read.
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }}

    def _change(self, change: Change, plan: MutationPlan) -> Iterator[it.Element]:
        if isinstance(change, PutCandidate):
            yield from it.put_candidate(change, plan.scope, plan.principal, self._main,
                                        self._keys)
        elif isinstance(change, MoveCandidate):
            yield from it.move_candidate(change, plan.scope, self._main, self._keys, plan.at_ms)
        elif isinstance(change, PutRecord):
            yield from it.put_record(change, plan.scope, self._main, plan.at_ms)
        elif isinstance(change, TombstoneRecord):
            yield from it.tombstone_record(change, plan.scope, self._main)
        elif isinstance(change, ExpireRecord):
            yield from it.expire_record(change, plan.scope, self._main)
        elif isinstance(change, LedgerEntry):
            if not self._ledger:
                # A forget the ledger does not keep could come back with a restore: refuse.
                raise EngramError
            yield ledger_element(change, plan.scope, self._ledger)


def _head_of(item: Mapping[str, Any]) -> JournalHead:
    """The journal head an item (the HEAD item, as stored) holds."""
    return JournalHead(cursor=it.number(item, "cursor"), event_digest=it.text(item, "event_digest"))
