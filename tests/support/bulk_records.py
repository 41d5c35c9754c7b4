"""Admitted records planted in bulk: what admissions commit, 25 items per request.

One capture + admission pair through the tool handlers costs five or more sequential AWS
calls (about a quarter of a second on the local service's moto server), so a test or bench
that needs thousands of admitted records plants them like this instead: each record's items
come from the write path's own mapping (``adapters/dynamodb/items.put_record``, as
``commit`` writes them), each record gets the ``accept`` journal event its admission would
commit (``domain/journal.build_event``, chained from the scope's current head, with the
decision receipt of the default policy and verifier), and the journal head moves once, at
the end, conditioned on the head it started from. The writes go through the DynamoDB API
(``BatchWriteItem``), so the main table's stream feeds the projector as for admissions.
Skipped: the candidate items and idempotency entries (an admitted candidate keeps only
metadata; neither is ever exported, searched or read by ``get``), and the capture events.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from engram_memory.adapters.dynamodb import items
from engram_memory.contract.inputs import CaptureArgs
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import receipts, records
from engram_memory.domain.canonical import record_id_for
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.intent import intent_digest
from engram_memory.domain.journal import Actor, JournalEvent, JournalHead, build_event
from engram_memory.domain.lifecycle import Operation, State
from engram_memory.services.policy import AssertedEvidenceVerifier
from engram_memory.services.ports.write import PutRecord
from engram_memory.settings import Settings

BATCH = 25  # BatchWriteItem's limit
ACTOR = Actor(principal="user:importer", agent_id="agent:bulk", session_id="bulk-plant")


def effective(capture_args: Mapping[str, Any]) -> dict[str, Any]:
    """The effective payload a capture of these arguments records (validated and
    canonicalized as the tool does; no retention asked for, so the default one)."""
    payload = canonical_arguments(CaptureArgs.model_validate(capture_args))["payload"]
    retention = records.resolve_retention(payload.get("retention"), now_ms=0,
                                          retain_allowed=False, ceiling_ms=0)
    return records.effective_payload(payload, retention)


def _head(client: Any, table: str, scope: Scope) -> JournalHead:
    item = client.get_item(TableName=table, ConsistentRead=True,
                           Key=items.key(items.journal_pk(scope), items.HEAD_SK)).get("Item")
    if item is None:
        return JournalHead()
    return JournalHead(cursor=items.number(item, "cursor"),
                       event_digest=items.text(item, "event_digest"))


def _event_item(scope: Scope, event: JournalEvent) -> dict[str, Any]:
    """The journal event item as ``DynamoMemoryStore.commit`` puts it."""
    return {**items.key(items.journal_pk(scope), items.event_sk(event.cursor)),
            "event": items.s(event.to_json()), "event_digest": items.s(event.event_digest),
            "previous_event_digest": items.s(str(event.body["previous_event_digest"])),
            "cursor": items.n(event.cursor)}


def _admission(settings: Settings, scope: Scope, payload: Mapping[str, Any], n: int,
               head: JournalHead, at_ms: int) -> tuple[str, list[dict[str, Any]], JournalEvent]:
    """One admitted record's items and its accept event on ``head``."""
    record_digest = records.record_digest_for(scope, payload)
    record_id = record_id_for(record_digest)
    candidate_id = records.candidate_id_for(scope, ACTOR.principal, f"bulk-{n:07d}")
    trust = records.DEFAULT_TRUST_CLASS
    intent = intent_digest(Tool.REQUEST_ADMISSION, {"candidate_id": candidate_id,
                                                    "idempotency_key": f"bulk-admit-{n:07d}"})
    receipt = receipts.decision_receipt(
        candidate_id=candidate_id, status="accepted",
        policy_id=settings.admission_policy_id,
        policy_version=settings.admission_policy_version,
        bound_policy_version=settings.admission_policy_version,
        trust_class=trust, record_id=record_id)
    event = build_event(
        head, scope=scope, operation=Operation.ACCEPT.value,
        subject={"candidate_id": candidate_id, "record_id": record_id},
        from_state=State.PENDING.value, to_state=State.ACCEPTED_CURRENT.value, actor=ACTOR,
        at_ms=at_ms, digests={"decision_receipt_digest": receipts.decision_receipt_digest(receipt),
                              "record_digest": record_digest, "intent_digest": intent})
    record = records.build_record(record_digest, payload, trust_class=trust,
                                  recorded_at_ms=at_ms)
    valid_time = payload["valid_time"]
    change = PutRecord(
        record=record, payload_digest=records.payload_digest(payload),
        valid_t=int(valid_time["t"]), valid_t_end=valid_time.get("t_end"),
        expires_at_ms=records.expires_at_ms(payload), cursor=event.cursor,
        trust_binding={"trust_class": trust,
                       "verifier_id": AssertedEvidenceVerifier.VERIFIER_ID,
                       "decision_receipt_digest": receipts.decision_receipt_digest(receipt)},
        derivative_rule=records.derivative_rule(payload))
    puts = [element["Put"]["Item"]
            for _, element in items.put_record(change, scope, settings.table_name, at_ms)]
    return record_id, [*puts, _event_item(scope, event)], event


def _write(client: Any, table: str, batch: list[dict[str, Any]]) -> None:
    pending: dict[str, Any] = {table: [{"PutRequest": {"Item": item}} for item in batch]}
    while pending:
        pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def plant(client: Any, settings: Settings, scope: Scope,
          payloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """Admit every effective payload (see :func:`effective`) in ``scope``, each a new
    record; their record ids, in order."""
    table = settings.table_name
    start = head = _head(client, table, scope)
    at_ms = int(time.time() * 1000)
    record_ids: list[str] = []
    batch: list[dict[str, Any]] = []
    for n, payload in enumerate(payloads, start=start.cursor):
        record_id, written, event = _admission(settings, scope, payload, n, head, at_ms)
        head = JournalHead(cursor=event.cursor, event_digest=event.event_digest)
        record_ids.append(record_id)
        batch.extend(written)
        while len(batch) >= BATCH:
            _write(client, table, batch[:BATCH])
            del batch[:BATCH]
    if batch:
        _write(client, table, batch)
    condition = ({"ConditionExpression": "attribute_not_exists(pk)"} if start.cursor == 0 else
                 {"ConditionExpression": "#cursor = :expected",
                  "ExpressionAttributeNames": {"#cursor": "cursor"},
                  "ExpressionAttributeValues": {":expected": items.n(start.cursor)}})
    client.put_item(TableName=table, Item={
        **items.key(items.journal_pk(scope), items.HEAD_SK),
        "cursor": items.n(head.cursor), "event_digest": items.s(head.event_digest)},
        **condition)
    return record_ids
