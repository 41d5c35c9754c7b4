"""The MemoryStore port in memory, with the DynamoDB store's commit semantics.

A commit is all-or-nothing under one lock and fails exactly as the DynamoDB adapter
reports a cancelled ``TransactWriteItems`` (adapters/aws_errors.py): a taken
idempotency key → CommitConflict(IDEMPOTENCY, …); else a confirmation that is not
consumable → GateFailed; else a moved head alone → CommitConflict(HEAD) naming the head
that won; else the failed kinds (HEAD, STATE). tests/integration/write_path/
test_store_contract.py runs the same cases against both adapters.
"""

from __future__ import annotations

from dataclasses import replace

from engram_memory.adapters.memory.changes import apply_change, change_holds
from engram_memory.adapters.memory.tables import MemoryTables
from engram_memory.domain.confirmation import ConfirmationState, Verdict, verdict_on
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import BlobMissing, GateFailed
from engram_memory.domain.journal import JournalEvent, JournalHead
from engram_memory.services.ports.write import (
    CandidateEntry,
    CommitConflict,
    ConflictKind,
    GateConsumption,
    IdempotencyEntry,
    MutationPlan,
    ReadRequest,
    ReadResult,
    RecordEntry,
)


class InMemoryStore:
    """MemoryStore over :class:`MemoryTables` (shared with the in-memory gate)."""

    def __init__(self, tables: MemoryTables) -> None:
        self._t = tables

    def get_idempotency(self, scope: Scope, principal: str, key: str) -> IdempotencyEntry | None:
        """The committed reservation of ``key`` for ``principal``, if any."""
        return self._t.idempotency.get((scope, principal, key))

    def get_candidate(self, scope: Scope, candidate_id: str) -> CandidateEntry | None:
        """A candidate's metadata in ``scope``, if any."""
        return self._t.candidates.get((scope, candidate_id))

    def load_sealed(self, scope: Scope, candidate_id: str, chunks: int) -> bytes:
        """A candidate's sealed material (BlobMissing when shredded)."""
        sealed = self._t.sealed.get((scope, candidate_id))
        if sealed is None or chunks == 0:
            raise BlobMissing
        return sealed

    def get_wrapped_key(self, scope: Scope, candidate_id: str) -> bytes | None:
        """A candidate's wrapped data key, if not shredded."""
        return self._t.wrapped_keys.get((scope, candidate_id))

    def get_record(self, scope: Scope, record_id: str) -> RecordEntry | None:
        """A record's state and digests in ``scope``, if any."""
        return self._t.records.get((scope, record_id))

    def has_tombstone(self, scope: Scope, payload_digest: str) -> bool:
        """True when a record with this effective payload digest was forgotten."""
        return (scope, payload_digest) in self._t.tombstones

    def journal_head(self, scope: Scope) -> JournalHead:
        """The scope's journal head (cursor 0 when empty)."""
        return self._t.heads.get(scope, JournalHead())

    def read_together(self, scope: Scope, request: ReadRequest) -> ReadResult:
        """Every item ``request`` names (one lock: a snapshot, stronger than DynamoDB's)."""
        with self._t.lock:
            return self._read(scope, request)

    def _read(self, scope: Scope, request: ReadRequest) -> ReadResult:
        sealed: tuple[bytes, ...] = ()
        if request.chunks is not None:
            candidate_id, count = request.chunks
            found = self._t.sealed.get((scope, candidate_id))
            sealed = () if found is None or count < 1 else (found,)
        return ReadResult(
            idempotency=(None if request.idempotency is None
                         else self.get_idempotency(scope, *request.idempotency)),
            candidate=(None if request.candidate_id is None
                       else self.get_candidate(scope, request.candidate_id)),
            wrapped_key=(None if request.wrapped_key_of is None
                         else self.get_wrapped_key(scope, request.wrapped_key_of)),
            chunks=sealed,
            record=None if request.record_id is None else self.get_record(scope, request.record_id),
            tombstone=(request.tombstone_of is not None
                       and self.has_tombstone(scope, request.tombstone_of)),
            head=self.journal_head(scope) if request.head else None,
            confirmation=(None if request.confirmation_ref is None
                          else self._t.confirmations.get((scope, request.confirmation_ref))),
        )

    def journal_events(self, scope: Scope) -> list[JournalEvent]:
        """Every event of the scope in cursor order."""
        return list(self._t.events.get(scope, []))

    def commit(self, plan: MutationPlan) -> None:
        """Apply ``plan`` atomically or not at all."""
        with self._t.lock:
            self._check(plan)
            self._apply(plan)

    def _check(self, plan: MutationPlan) -> None:
        scope, failed = plan.scope, set()
        if (scope, plan.principal, plan.idempotency_key) in self._t.idempotency:
            failed.add(ConflictKind.IDEMPOTENCY)
        if self.journal_head(scope).cursor != plan.head.cursor:
            failed.add(ConflictKind.HEAD)
        if not all(change_holds(self._t, scope, change) for change in plan.changes):
            failed.add(ConflictKind.STATE)
        if ConflictKind.IDEMPOTENCY in failed:
            raise CommitConflict(frozenset(failed))
        if plan.gate is not None and not self._consumable(plan.gate):
            raise GateFailed
        if failed == {ConflictKind.HEAD}:
            raise CommitConflict(frozenset(failed), head=self.journal_head(scope))
        if failed:
            raise CommitConflict(frozenset(failed))

    def _consumable(self, gate: GateConsumption) -> bool:
        found = self._t.confirmations.get((gate.scope, gate.confirmation_ref))
        return verdict_on(found, gate.principal, gate.tool.value, gate.target,
                          gate.operation_digest, gate.at_ms) is Verdict.APPROVED

    def _apply(self, plan: MutationPlan) -> None:
        scope, event = plan.scope, plan.event
        self._t.idempotency[(scope, plan.principal, plan.idempotency_key)] = IdempotencyEntry(
            tool=plan.tool, intent_digest=plan.intent_digest, result=dict(plan.result))
        self._t.heads[scope] = JournalHead(cursor=event.cursor, event_digest=event.event_digest)
        self._t.events.setdefault(scope, []).append(event)
        if plan.gate is not None:
            key = (plan.gate.scope, plan.gate.confirmation_ref)
            self._t.confirmations[key] = replace(self._t.confirmations[key],
                                                 state=ConfirmationState.CONSUMED)
        for change in plan.changes:
            apply_change(self._t, scope, change)
