"""Plan changes in memory: the condition each must meet, and its effect.

The conditions are the DynamoDB elements' (adapters/dynamodb/items.py): a new candidate
or record must not exist; a move needs the state it moves from.
"""

from __future__ import annotations

from dataclasses import replace

from engram_memory.adapters.memory.tables import MemoryTables
from engram_memory.domain.context import Scope
from engram_memory.domain.lifecycle import State
from engram_memory.services.ports import (
    Change,
    DueExpiry,
    ExpireRecord,
    LedgerEntry,
    MoveCandidate,
    PutCandidate,
    PutRecord,
    RecordEntry,
    TombstoneRecord,
)


def change_holds(t: MemoryTables, scope: Scope, change: Change) -> bool:
    """True when ``change``'s condition holds on the current items."""
    if isinstance(change, PutCandidate):
        return (scope, change.entry.candidate_id) not in t.candidates
    if isinstance(change, MoveCandidate):
        candidate = t.candidates.get((scope, change.candidate_id))
        return candidate is not None and candidate.state == change.from_state
    if isinstance(change, PutRecord):
        return (scope, change.record.record_id) not in t.records
    if isinstance(change, LedgerEntry):
        return True
    record_id = change.record_id if isinstance(change, TombstoneRecord) else change.due.record_id
    record = t.records.get((scope, record_id))
    return record is not None and record.state == change.from_state


def apply_change(t: MemoryTables, scope: Scope, change: Change) -> None:
    """Apply ``change`` (its condition was checked)."""
    if isinstance(change, PutCandidate):
        key = (scope, change.entry.candidate_id)
        t.candidates[key] = replace(change.entry, blob_chunks=1)  # one chunk in memory
        t.sealed[key] = change.sealed
        t.wrapped_keys[key] = change.wrapped_key
    elif isinstance(change, MoveCandidate):
        key = (scope, change.candidate_id)
        moved = replace(t.candidates[key], state=change.to_state, held=change.is_hold)
        if change.shred:
            moved = replace(moved, blob_chunks=0)
            t.sealed.pop(key, None)
            t.wrapped_keys.pop(key, None)
        t.candidates[key] = moved
    elif isinstance(change, PutRecord):
        _put_record(t, scope, change)
    elif isinstance(change, LedgerEntry):
        t.ledger.append((scope, change))
    elif isinstance(change, TombstoneRecord):
        key = (scope, change.record_id)
        t.records[key] = replace(t.records[key], state=State.TOMBSTONED.value, parts=0)
        t.record_content.pop(key, None)
        t.tombstones.add((scope, change.payload_digest))
    else:
        _expire(t, scope, change)


def _put_record(t: MemoryTables, scope: Scope, change: PutRecord) -> None:
    record = change.record
    key = (scope, record.record_id)
    t.records[key] = RecordEntry(record_id=record.record_id,
                                 state=State.ACCEPTED_CURRENT.value,
                                 record_digest=record.record_digest,
                                 payload_digest=change.payload_digest, parts=0)
    t.record_content[key] = dict(record.view)
    if change.expires_at_ms is not None:
        t.expiries[key] = DueExpiry(record_id=record.record_id,
                                    expires_at_ms=change.expires_at_ms,
                                    derivative_rule=change.derivative_rule)


def _expire(t: MemoryTables, scope: Scope, change: ExpireRecord) -> None:
    key = (scope, change.due.record_id)
    t.records[key] = replace(t.records[key], state=State.EXPIRED.value)
    if change.remove_content:
        t.record_content.pop(key, None)
    t.expiries.pop(key, None)
