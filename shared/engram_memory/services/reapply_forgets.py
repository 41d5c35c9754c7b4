"""Reapply the forget ledger to a main table restored to a point in time.

A point-in-time restore of the main table brings back, as current, every record forgotten
and every candidate withdrawn after the restore point. The ledger (its own table, written in
the same transaction as each move: services/forget_ledger.py) is not restored with it, so it
still knows them. This use case, run by an operator on the restored table before it serves
(``engram-memory reapply-forgets``, docs/forget-ledger.md):

1. proves the ledger covers the gap: its coverage starts ``SETTLE_MS`` after the ledger
   table was created (DescribeTable; no item write can move it), and must start no later
   than the restore point; a ledger that cannot be described or read is no proof;
2. reads every entry from ``SKEW_MS`` before the restore point on, all of them before
   changing anything (any refusal: RESTORE_REFUSED, nothing changed);
3. tombstones each ledgered record, and withdraws (shreds) each ledgered candidate, that the
   restored table still holds in a state with content, each in one commit with a journal
   event of its own (actor ``operator``/``reapply-forgets``) naming the ledger entry.

Forget and withdrawal are terminal, so reapplying an entry is right whenever its target
still has content, whatever the clocks say: the skew margin can only add entries that are
then found done. A rerun finds everything done and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from engram_memory.domain.errors import RestoreRefused
from engram_memory.domain.journal import Actor, build_event
from engram_memory.domain.lifecycle import Operation, State
from engram_memory.services.pipeline import Sleep, commit_fenced
from engram_memory.services.ports.write import (
    Change,
    LedgerEntry,
    MoveCandidate,
    MutationPlan,
    TombstoneRecord,
)

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope
    from engram_memory.domain.journal import JournalHead
    from engram_memory.services.ports.write import Clock, MemoryStore

SETTLE_MS = 60 * 60 * 1000
"""From the ledger table's creation to the instant every forget is known to be ledgered:
the deployment that creates it also updates the functions, and invocations of the old code
may still be running for up to their timeout (docs/forget-ledger.md, "Coverage")."""
SKEW_MS = 5 * 60 * 1000
"""Entries read from this long before the restore point (clock skew; extra ones are no-ops)."""
OPERATOR = Actor(principal="operator", agent_id="reapply-forgets", session_id="restore")
TOOL = "reapply_forgets"
_OPERATIONS = {Operation.TOMBSTONE.value: "record_id", Operation.WITHDRAW.value: "candidate_id"}


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """One ledger entry and the scope it belongs to."""

    scope: Scope
    entry: LedgerEntry


class ForgetLedgerSource(Protocol):
    """The ledger as the reapplication reads it (RestoreRefused when it cannot)."""

    def covered_since_ms(self) -> int:
        """The instant from which the ledger table exists."""
        ...

    def entries(self, since_ms: int) -> Sequence[LedgerRecord]:
        """Every entry at or after ``since_ms``, each scope's in cursor order."""
        ...


@dataclass
class ReapplyReport:
    """What a run did: the targets it forgot or withdrew again, and what it found done."""

    reapplied: list[str] = field(default_factory=list)
    already_done: int = 0
    absent: int = 0


class ReapplyForgets:
    """Reapply every ledgered forget and withdrawal after a restore point to a store."""

    def __init__(self, *, ledger: ForgetLedgerSource, restored: MemoryStore, clock: Clock,
                 sleep: Sleep) -> None:
        self._ledger = ledger
        self._store = restored
        self._clock = clock
        self._sleep = sleep

    def run(self, restore_point_ms: int) -> ReapplyReport:
        """Prove coverage, read the gap's entries, then reapply them; the report."""
        if self._ledger.covered_since_ms() + SETTLE_MS > restore_point_ms:
            raise RestoreRefused
        records = list(self._ledger.entries(restore_point_ms - SKEW_MS))
        if any(_OPERATIONS.get(r.entry.operation) != r.entry.subject_key for r in records):
            raise RestoreRefused
        report = ReapplyReport()
        for record in records:
            self._reapply(record, report)
        return report

    def _reapply(self, record: LedgerRecord, report: ReapplyReport) -> None:
        scope, entry = record.scope, record.entry
        change = self._change(scope, entry)
        if change is _ABSENT:
            report.absent += 1
            return
        if change is _DONE:
            report.already_done += 1
            return
        now_ms = self._clock.now_ms()

        def build(head: JournalHead) -> tuple[MutationPlan, None]:
            to_state = State.TOMBSTONED if entry.subject_key == "record_id" else State.WITHDRAWN
            event = build_event(
                head, scope=scope, operation=entry.operation,
                subject={entry.subject_key: entry.target_id},
                from_state=_from_state(change), to_state=to_state.value, actor=OPERATOR,
                at_ms=now_ms, digests={"ledger_event_digest": entry.digests["event_digest"]})
            moved = _on_cursor(change, event.cursor, now_ms)
            return MutationPlan(
                scope=scope, principal=OPERATOR.principal,
                idempotency_key=f"reapply-{entry.cursor}-{entry.target_id}", tool=TOOL,
                intent_digest=entry.digests["event_digest"], result={}, head=head,
                event=event, changes=(moved,), at_ms=now_ms), None

        commit_fenced(self._store, scope, build, self._sleep)
        report.reapplied.append(entry.target_id)

    def _change(self, scope: Scope, entry: LedgerEntry) -> Change | object:
        """The move still to make; _DONE when made; _ABSENT when the restored table lacks the
        target (captured or admitted after the restore point)."""
        if entry.subject_key == "record_id":
            found = self._store.get_record(scope, entry.target_id)
            if found is None:
                return _ABSENT
            if found.state == State.TOMBSTONED.value:
                return _DONE
            return TombstoneRecord(record_id=found.record_id, from_state=found.state,
                                   payload_digest=found.payload_digest, parts=found.parts,
                                   cursor=0, at_ms=0)
        candidate = self._store.get_candidate(scope, entry.target_id)
        if candidate is None:
            return _ABSENT
        if candidate.state != State.PENDING.value:
            return _DONE
        return MoveCandidate(candidate_id=candidate.candidate_id, from_state=candidate.state,
                             to_state=State.WITHDRAWN.value, shred=True,
                             blob_chunks=candidate.blob_chunks)


_DONE = object()
_ABSENT = object()


def _from_state(change: Change | object) -> str:
    assert isinstance(change, TombstoneRecord | MoveCandidate)
    return change.from_state


def _on_cursor(change: Change | object, cursor: int, at_ms: int) -> Change:
    """The change with the cursor and instant of the event it commits with."""
    if isinstance(change, TombstoneRecord):
        return TombstoneRecord(record_id=change.record_id, from_state=change.from_state,
                               payload_digest=change.payload_digest, parts=change.parts,
                               cursor=cursor, at_ms=at_ms)
    assert isinstance(change, MoveCandidate)
    return change
