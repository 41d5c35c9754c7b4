"""Item mapping: keys, attribute values, and plan changes → TransactWriteItems elements.

Every key starts with the host-bound scope (docs/storage.md). Large binary or text values
are chunked: an item is at most 400 KB, a transaction at most 4 MB and 100 items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any

from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.context import Scope
from engram_memory.domain.lifecycle import State
from engram_memory.services.ports.write import (
    CandidateEntry,
    DueExpiry,
    ExpireRecord,
    IdempotencyEntry,
    MoveCandidate,
    PutCandidate,
    PutRecord,
    RecordEntry,
    TombstoneRecord,
)

CHUNK_BYTES = 300_000
"""Largest ciphertext or record-part chunk per item (items are ≤ 400 KB)."""
INLINE_RECORD_BYTES = 350_000
"""A record JSON up to this size stays inline in ``record_json``; larger → parts."""


class ElementKind(StrEnum):
    """What a transaction element guards; cancellation reasons map back through it."""

    IDEMPOTENCY = "idempotency"
    HEAD = "head"
    STATE = "state"
    CONFIRMATION = "confirmation"


# --- keys -------------------------------------------------------------------------------

def scope_pk(scope: Scope) -> str:
    """Partition of a scope's candidates, records and tombstone guards."""
    return f"SCOPE#{scope.tenant_id}#{scope.workspace_id}"


def journal_pk(scope: Scope) -> str:
    """Partition of a scope's journal (head + events)."""
    return f"JOURNAL#{scope.tenant_id}#{scope.workspace_id}"


def idempotency_pk(scope: Scope, principal: str) -> str:
    """Partition of a principal's idempotency reservations in a scope."""
    return f"IDEM#{scope.tenant_id}#{scope.workspace_id}#{principal}"


def key_pk(scope: Scope) -> str:
    """Partition of a scope's wrapped data keys (key table)."""
    return f"KEY#{scope.tenant_id}#{scope.workspace_id}"


def candidate_sk(candidate_id: str) -> str:
    """Sort key of a candidate (and of its wrapped key in the key table)."""
    return f"CAND#{candidate_id}"


def blob_sk(candidate_id: str, index: int) -> str:
    """Sort key of one ciphertext chunk."""
    return f"CAND#{candidate_id}#BLOB#{index:04d}"


def record_sk(record_id: str) -> str:
    """Sort key of a record."""
    return f"REC#{record_id}"


def part_sk(record_id: str, index: int) -> str:
    """Sort key of one part of a large record's JSON."""
    return f"REC#{record_id}#PART#{index:04d}"


def tombstone_sk(payload_digest: str) -> str:
    """Sort key of a tombstone guard."""
    return f"TOMB#{payload_digest}"


def expiry_pk(scope: Scope) -> str:
    """Partition of a scope's sparse expiry index (docs/expiry.md)."""
    return f"EXPIRY#{scope.tenant_id}#{scope.workspace_id}"


def expiry_sk(expires_at_ms: int, record_id: str) -> str:
    """Sort key of an expiry entry: zero-padded ms first, so sort order = expiry order."""
    return f"{expires_at_ms:015d}#{record_id}"


# The sparse ``waiting`` index (adapters/dynamodb/waiting.py): only waiting items carry these.
WAITING_PK = "waiting_pk"
WAITING_SK = "waiting_sk"
CONFIRMATION_KIND = "C#"
ADJUDICATION_KIND = "A#"


def waiting_pk(scope: Scope) -> str:
    """The waiting index partition of a workspace (its confirmation partition's value)."""
    return f"CONF#{scope.tenant_id}#{scope.workspace_id}"


def confirmation_waiting_sk(expires_at_ms: int, elicitation_ref: str) -> str:
    """A pending confirmation's waiting sort key: soonest expiry first."""
    return f"{CONFIRMATION_KIND}{expires_at_ms:015d}#{elicitation_ref}"


def adjudication_waiting_sk(held_at_ms: int, candidate_id: str) -> str:
    """A held candidate's waiting sort key: oldest hold first."""
    return f"{ADJUDICATION_KIND}{held_at_ms:015d}#{candidate_id}"


HEAD_SK = "HEAD"


def event_sk(cursor: int) -> str:
    """Sort key of a journal event (zero-padded so sort order = cursor order)."""
    return f"EV#{cursor:020d}"


def key(pk: str, sk: str) -> dict[str, Any]:
    """A low-level primary key."""
    return {"pk": {"S": pk}, "sk": {"S": sk}}


# --- values -----------------------------------------------------------------------------

def s(value: str) -> dict[str, str]:
    """String attribute."""
    return {"S": value}


def n(value: int) -> dict[str, str]:
    """Number attribute."""
    return {"N": str(value)}


def b(value: bytes) -> dict[str, bytes]:
    """Binary attribute."""
    return {"B": value}


def json_s(value: Mapping[str, Any]) -> dict[str, str]:
    """Canonical JSON text attribute."""
    return {"S": canonical_json(dict(value)).decode("utf-8")}


def chunks(data: bytes, size: int = CHUNK_BYTES) -> list[bytes]:
    """``data`` split into pieces of at most ``size`` bytes (at least one piece)."""
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]


def text(item: Mapping[str, Any], name: str) -> str:
    """A string attribute's value."""
    return str(item[name]["S"])


def number(item: Mapping[str, Any], name: str, default: int = 0) -> int:
    """A number attribute's value (``default`` when absent)."""
    return int(item[name]["N"]) if name in item else default


def optional_number(item: Mapping[str, Any], name: str) -> int | None:
    """A number attribute's value, or None when absent."""
    value = item.get(name)
    return int(value["N"]) if value is not None else None


def optional_text(item: Mapping[str, Any], name: str) -> str | None:
    """A string attribute's value, or None when absent."""
    value = item.get(name)
    return str(value["S"]) if value is not None else None


def to_idempotency(item: Mapping[str, Any]) -> IdempotencyEntry:
    """An idempotency item → entry."""
    return IdempotencyEntry(tool=text(item, "tool"), intent_digest=text(item, "intent_digest"),
                            result=json.loads(text(item, "result")))


def to_candidate(item: Mapping[str, Any]) -> CandidateEntry:
    """A candidate item → entry."""
    return CandidateEntry(
        candidate_id=text(item, "candidate_id"),
        state=text(item, "state"),
        blob_chunks=number(item, "blob_chunks"),
        record_digest=text(item, "record_digest"),
        payload_digest=text(item, "payload_digest"),
        policy_id=text(item, "policy_id"),
        policy_version=text(item, "policy_version"),
        captured_at_ms=number(item, "captured_at_ms"),
        held=WAITING_SK in item,
    )


def to_record(item: Mapping[str, Any]) -> RecordEntry:
    """A record item → entry (state and digests only)."""
    return RecordEntry(record_id=text(item, "record_id"), state=text(item, "state"),
                       record_digest=text(item, "record_digest"),
                       payload_digest=text(item, "payload_digest"),
                       parts=number(item, "record_parts"))


def to_due_expiry(item: Mapping[str, Any]) -> DueExpiry:
    """An expiry index item → entry (a missing rule reads as the default make-ineligible)."""
    rule = text(item, "derivative_rule") if "derivative_rule" in item else "make-ineligible"
    return DueExpiry(record_id=text(item, "record_id"),
                     expires_at_ms=number(item, "expires_at_ms"), derivative_rule=rule)


# --- changes → transaction elements -----------------------------------------------------

Element = tuple[ElementKind, dict[str, Any]]


def _put(table: str, item: dict[str, Any], condition: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"TableName": table, "Item": item}
    if condition:
        body["ConditionExpression"] = condition
    return {"Put": body}


def _delete(table: str, item_key: dict[str, Any]) -> dict[str, Any]:
    return {"Delete": {"TableName": table, "Key": item_key}}


def put_candidate(change: PutCandidate, scope: Scope, principal: str, main: str,
                  keys: str) -> Iterator[Element]:
    """Capture: candidate item, ciphertext chunks, wrapped key (key table)."""
    entry, pieces, pk = change.entry, chunks(change.sealed), scope_pk(scope)
    item = {
        **key(pk, candidate_sk(entry.candidate_id)),
        "candidate_id": s(entry.candidate_id), "state": s(entry.state),
        "blob_chunks": n(len(pieces)), "record_digest": s(entry.record_digest),
        "payload_digest": s(entry.payload_digest), "policy_id": s(entry.policy_id),
        "policy_version": s(entry.policy_version), "captured_at_ms": n(entry.captured_at_ms),
        "cursor": n(change.cursor), "principal": s(principal),
    }
    yield ElementKind.STATE, _put(main, item, "attribute_not_exists(pk)")
    for index, piece in enumerate(pieces):
        chunk = {**key(pk, blob_sk(entry.candidate_id, index)), "ct": b(piece)}
        yield ElementKind.STATE, _put(main, chunk, "attribute_not_exists(pk)")
    wrapped = {**key(key_pk(scope), candidate_sk(entry.candidate_id)),
               "wrapped": b(change.wrapped_key), "kms_key_id": s(change.key_id)}
    yield ElementKind.STATE, _put(keys, wrapped, "attribute_not_exists(pk)")


def move_candidate(change: MoveCandidate, scope: Scope, main: str, keys: str,
                   at_ms: int) -> Iterator[Element]:
    """A candidate state change; with ``shred``, its key and ciphertext deleted too."""
    names = {"#state": "state"}
    values: dict[str, Any] = {":from": s(change.from_state), ":to": s(change.to_state),
                              ":at": n(at_ms)}
    sets = ["#state = :to", "decided_at_ms = :at"]
    if change.decision_receipt is not None:
        sets.append("decision_receipt = :receipt")
        values[":receipt"] = json_s(change.decision_receipt)
    if change.record_id is not None:
        sets.append("record_id = :rid")
        values[":rid"] = s(change.record_id)
    if change.shred:
        sets.append("blob_chunks = :zero")
        values[":zero"] = n(0)
    # A hold (pending → pending) puts the candidate in the waiting index; any decision
    # out of pending takes it out again.
    if change.is_hold:
        names.update({"#wpk": WAITING_PK, "#wsk": WAITING_SK})
        sets.extend(["#wpk = :wpk", "#wsk = :wsk"])
        values[":wpk"] = s(waiting_pk(scope))
        values[":wsk"] = s(adjudication_waiting_sk(at_ms, change.candidate_id))
        removal = ""
    else:
        names.update({"#wpk": WAITING_PK, "#wsk": WAITING_SK})
        removal = " REMOVE #wpk, #wsk"
    update = {"Update": {
        "TableName": main, "Key": key(scope_pk(scope), candidate_sk(change.candidate_id)),
        "UpdateExpression": "SET " + ", ".join(sets) + removal,
        "ConditionExpression": "#state = :from",
        "ExpressionAttributeNames": names, "ExpressionAttributeValues": values,
    }}
    yield ElementKind.STATE, update
    if change.shred:
        for index in range(change.blob_chunks):
            yield ElementKind.STATE, _delete(main, key(scope_pk(scope),
                                                       blob_sk(change.candidate_id, index)))
        yield ElementKind.STATE, _delete(keys, key(key_pk(scope),
                                                   candidate_sk(change.candidate_id)))


def put_record(change: PutRecord, scope: Scope, main: str, at_ms: int) -> Iterator[Element]:
    """Admission: the record item (inline JSON, or parts when large)."""
    record, pk = change.record, scope_pk(scope)
    body = canonical_json(dict(record.view))
    item: dict[str, Any] = {
        **key(pk, record_sk(record.record_id)),
        "record_id": s(record.record_id), "state": s(State.ACCEPTED_CURRENT.value),
        "record_digest": s(record.record_digest), "payload_digest": s(change.payload_digest),
        "valid_t": n(change.valid_t), "recorded_cursor": n(change.cursor),
        "recorded_at_ms": n(at_ms), "trust_binding": json_s(change.trust_binding),
        "trust_class": s(str(change.trust_binding["trust_class"])),
    }
    purpose = record.view.get("purpose_ref")
    if isinstance(purpose, str):
        # Beside record_json so get can filter by purpose inside DynamoDB (no timing oracle).
        item["purpose_ref"] = s(purpose)
    if change.valid_t_end is not None:
        item["valid_t_end"] = n(change.valid_t_end)
    if change.expires_at_ms is not None:
        item["expires_at_ms"] = n(change.expires_at_ms)
        entry = {**key(expiry_pk(scope), expiry_sk(change.expires_at_ms, record.record_id)),
                 "record_id": s(record.record_id), "expires_at_ms": n(change.expires_at_ms),
                 "derivative_rule": s(change.derivative_rule)}
        yield ElementKind.STATE, _put(main, entry)
    pieces = [] if len(body) <= INLINE_RECORD_BYTES else chunks(body)
    if pieces:
        item["record_parts"] = n(len(pieces))
    else:
        item["record_json"] = s(body.decode("utf-8"))
    yield ElementKind.STATE, _put(main, item, "attribute_not_exists(pk)")
    for index, piece in enumerate(pieces):
        part = {**key(pk, part_sk(record.record_id, index)), "part": b(piece)}
        yield ElementKind.STATE, _put(main, part)


def tombstone_record(change: TombstoneRecord, scope: Scope, main: str) -> Iterator[Element]:
    """Forget: state → tombstoned, content removed, guard written."""
    pk = scope_pk(scope)
    yield ElementKind.STATE, {"Update": {
        "TableName": main, "Key": key(pk, record_sk(change.record_id)),
        "UpdateExpression": "SET #state = :to, projection_invalidation = :pending, "
                            "tombstoned_cursor = :cursor, tombstoned_at_ms = :at "
                            "REMOVE record_json, record_parts",
        "ConditionExpression": "#state = :from",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {
            ":to": s(State.TOMBSTONED.value), ":from": s(change.from_state),
            ":pending": s("pending"), ":cursor": n(change.cursor), ":at": n(change.at_ms),
        },
    }}
    for index in range(change.parts):
        yield ElementKind.STATE, _delete(main, key(pk, part_sk(change.record_id, index)))
    guard = {**key(pk, tombstone_sk(change.payload_digest)), "record_id": s(change.record_id),
             "cursor": n(change.cursor)}
    yield ElementKind.STATE, _put(main, guard)


def expire_record(change: ExpireRecord, scope: Scope, main: str) -> Iterator[Element]:
    """Expiry: state → expired (content removed unless retained), index entry deleted."""
    pk, record_id = scope_pk(scope), change.due.record_id
    update = ("SET #state = :to, projection_invalidation = :pending, "
              "expired_cursor = :cursor, expired_at_ms = :at")
    if change.remove_content:
        update += " REMOVE record_json, record_parts"
    yield ElementKind.STATE, {"Update": {
        "TableName": main, "Key": key(pk, record_sk(record_id)),
        "UpdateExpression": update,
        "ConditionExpression": "#state = :from",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {
            ":to": s(State.EXPIRED.value), ":from": s(change.from_state),
            ":pending": s("pending"), ":cursor": n(change.cursor), ":at": n(change.at_ms),
        },
    }}
    if change.remove_content:
        for index in range(change.parts):
            yield ElementKind.STATE, _delete(main, key(pk, part_sk(record_id, index)))
    yield ElementKind.STATE, _delete(main, key(expiry_pk(scope), expiry_sk(
        change.due.expires_at_ms, record_id)))
