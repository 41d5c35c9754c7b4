"""The state the in-memory adapters share: one account's items, as plain values.

Keys start with the scope, as in DynamoDB (docs/storage.md), so two scopes never meet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from threading import Lock

from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.journal import JournalEvent, JournalHead
from engram_memory.services.confirmation import Confirmation, ConfirmationState
from engram_memory.services.ports import (
    CandidateEntry,
    DueExpiry,
    IdempotencyEntry,
    LedgerEntry,
    RecordEntry,
)

ScopedId = tuple[Scope, str]


@dataclass
class MemoryTables:
    """Every item the write path reads or commits, guarded by one lock (atomic commits)."""

    lock: Lock = field(default_factory=Lock)
    idempotency: dict[tuple[Scope, str, str], IdempotencyEntry] = field(default_factory=dict)
    candidates: dict[ScopedId, CandidateEntry] = field(default_factory=dict)
    sealed: dict[ScopedId, bytes] = field(default_factory=dict)
    wrapped_keys: dict[ScopedId, bytes] = field(default_factory=dict)
    records: dict[ScopedId, RecordEntry] = field(default_factory=dict)
    record_content: dict[ScopedId, object] = field(default_factory=dict)
    tombstones: set[ScopedId] = field(default_factory=set)
    expiries: dict[ScopedId, DueExpiry] = field(default_factory=dict)
    heads: dict[Scope, JournalHead] = field(default_factory=dict)
    events: dict[Scope, list[JournalEvent]] = field(default_factory=dict)
    confirmations: dict[ScopedId, Confirmation] = field(default_factory=dict)
    # The forget ledger (its own table in DynamoDB): what each forget and withdrawal left.
    ledger: list[tuple[Scope, LedgerEntry]] = field(default_factory=list)

    def approve(self, scope: Scope, ref: str, *, tool: Tool, target: str,
                operation_digest: str, principal: str, approved_at_ms: int,
                window_ms: int = 30_000) -> None:
        """Record a human approval of exactly one call, as the confirmation workflow does."""
        self.confirmations[(scope, ref)] = Confirmation(
            elicitation_ref=ref, state=ConfirmationState.APPROVED, tool=tool.value,
            target=target, operation_digest=operation_digest, principal=principal,
            created_at_ms=approved_at_ms, expires_at_ms=approved_at_ms + 300_000,
            window_seconds=window_ms // 1000, approved_at_ms=approved_at_ms,
            window_ends_at_ms=approved_at_ms + window_ms, decision="approve")
