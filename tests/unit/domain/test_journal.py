"""The journal hash chain: built events verify; any edit, gap or reorder is caught."""

from __future__ import annotations

import dataclasses

import pytest
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import CursorGap, JournalCorrupt
from engram_memory.domain.journal import (
    GENESIS_DIGEST,
    Actor,
    JournalEvent,
    JournalHead,
    build_event,
    event_digest_of,
    verify_chain,
)

SCOPE = Scope("tenant-a", "ws-main")
ACTOR = Actor("user:alice", "agent:writer", "session-1")


def _chain(length: int) -> list[JournalEvent]:
    events: list[JournalEvent] = []
    head = JournalHead()
    for i in range(length):
        event = build_event(head, scope=SCOPE, operation="capture",
                            subject={"candidate_id": f"cand_{i}"}, from_state=None,
                            to_state="pending", actor=ACTOR, at_ms=1000 + i)
        events.append(event)
        head = JournalHead(event.cursor, event.event_digest)
    return events


def test_a_built_chain_verifies_and_ends_at_its_last_event() -> None:
    events = _chain(5)
    head = verify_chain(events)
    assert head == JournalHead(5, events[-1].event_digest)
    assert events[0].body["previous_event_digest"] == GENESIS_DIGEST


def test_an_edited_event_is_journal_corrupt() -> None:
    events = _chain(3)
    body = dict(events[1].body)
    body["to_state"] = "accepted_current"
    events[1] = dataclasses.replace(events[1], body=body)
    with pytest.raises(JournalCorrupt):
        verify_chain(events)


def test_an_event_rehashed_after_an_edit_breaks_the_next_link() -> None:
    events = _chain(3)
    body = {**events[1].body, "principal": "user:mallory"}
    events[1] = JournalEvent(body=body, event_digest=event_digest_of(body))
    with pytest.raises(JournalCorrupt):
        verify_chain(events)


def test_a_missing_or_reordered_event_is_a_cursor_gap() -> None:
    events = _chain(4)
    with pytest.raises(CursorGap):
        verify_chain([events[0], events[2], events[3]])
    with pytest.raises(CursorGap):
        verify_chain([events[1], events[0]])


def test_events_round_trip_through_their_stored_json() -> None:
    event = _chain(1)[0]
    again = JournalEvent.from_json(event.to_json(), event.event_digest)
    assert verify_chain([again]).event_digest == event.event_digest
    assert event.event_id.startswith("evt_")
