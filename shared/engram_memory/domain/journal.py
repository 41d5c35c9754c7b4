"""The scope journal: content-free events, gap-free cursors and a SHA-256 hash chain.

Each event names what moved (ids, states, digests), who moved it (principal, agent,
session) and when, never what it says: the journal is safe to keep forever even after a
forget. ``event_digest`` covers the whole body including ``previous_event_digest``, so any
edit, deletion or reordering breaks :func:`verify_chain`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engram_memory.domain.canonical import DigestKind, canonical_json, digest, id_from_digest
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import CursorGap, JournalCorrupt

GENESIS_DIGEST = "sha256:" + "0" * 64
"""The ``previous_event_digest`` of a scope's first event."""


@dataclass(frozen=True, slots=True)
class JournalHead:
    """The last committed position of a scope's journal (cursor 0: empty journal)."""

    cursor: int = 0
    event_digest: str = GENESIS_DIGEST


@dataclass(frozen=True, slots=True)
class Actor:
    """Who performed a move: the host-bound identities, never a name from the text."""

    principal: str
    agent_id: str
    session_id: str


@dataclass(frozen=True, slots=True)
class JournalEvent:
    """One committed event: its canonical body and the digest over it."""

    body: Mapping[str, Any]
    event_digest: str

    @property
    def cursor(self) -> int:
        """The event's position (1-based, gap-free)."""
        return int(self.body["cursor"])

    @property
    def event_id(self) -> str:
        """``evt_`` + base32 of the event digest."""
        return id_from_digest("evt_", self.event_digest)

    def to_json(self) -> str:
        """The body as canonical JSON text (how it is stored)."""
        return canonical_json(dict(self.body)).decode("utf-8")

    @classmethod
    def from_json(cls, text: str, event_digest: str) -> JournalEvent:
        """Rebuild a stored event (its digest is checked by :func:`verify_chain`)."""
        return cls(body=json.loads(text), event_digest=event_digest)


def event_digest_of(body: Mapping[str, Any]) -> str:
    """The digest of an event body."""
    return digest(DigestKind.EVENT, dict(body))


def build_event(
    head: JournalHead,
    *,
    scope: Scope,
    operation: str,
    subject: Mapping[str, str],
    from_state: str | None,
    to_state: str,
    actor: Actor,
    at_ms: int,
    digests: Mapping[str, str] | None = None,
) -> JournalEvent:
    """The next event after ``head``: cursor + 1, chained to the head's digest."""
    body: dict[str, Any] = {
        "cursor": head.cursor + 1,
        "previous_event_digest": head.event_digest,
        "tenant_id": scope.tenant_id,
        "workspace_id": scope.workspace_id,
        "operation": operation,
        "subject": dict(subject),
        "to_state": to_state,
        "principal": actor.principal,
        "agent_id": actor.agent_id,
        "session_id": actor.session_id,
        "at_ms": at_ms,
        "digests": dict(digests or {}),
    }
    if from_state is not None:
        body["from_state"] = from_state
    return JournalEvent(body=body, event_digest=event_digest_of(body))


def verify_chain(events: Iterable[JournalEvent], start: JournalHead | None = None) -> JournalHead:
    """Check cursors are gap-free and every digest and link verifies; the final head.

    Raises CursorGap when a cursor is skipped or repeated, JournalCorrupt when a digest does
    not match its body or an event does not chain to its predecessor.
    """
    head = start or JournalHead()
    for event in events:
        if event.cursor != head.cursor + 1:
            raise CursorGap
        if event_digest_of(event.body) != event.event_digest:
            raise JournalCorrupt
        if event.body.get("previous_event_digest") != head.event_digest:
            raise JournalCorrupt
        head = JournalHead(cursor=event.cursor, event_digest=event.event_digest)
    return head
