"""Retention expiry: move records past their ``expires_at`` to ``expired`` (the sweeper).

Discovery is a Query on the sparse expiry index admission writes in the same transaction
as the record (``EXPIRY#{t}#{w}`` / ``{expires_at_ms:015d}#{record_id}``), never a scan.
Each due record is expired through the mutation machinery every tool uses: ONE commit
holding the idempotency entry of a deterministic system key (``expiry:{record_id}``), the
journal event on the scope head (actor ``system:expiry-sweeper``), the state change
conditioned on the state read, the removal of the content (``make-ineligible``) and the
deletion of the index entry. A re-run, or a concurrent sweeper, meets the idempotency
entry and replays: never a second event. Work per run is bounded by a record budget and a
time budget; workspaces are visited a page at a time, in turn, so none starves another.
Decisions: docs/expiry.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from engram_memory.domain.canonical import DigestKind, digest, format_cursor
from engram_memory.domain.errors import EngramError
from engram_memory.domain.journal import Actor, JournalHead, build_event
from engram_memory.domain.lifecycle import TRANSITIONS, Operation, State
from engram_memory.domain.principals import SWEEPER_PRINCIPAL
from engram_memory.domain.records import RETAIN
from engram_memory.services.pipeline import (
    Sleep,
    TimeLeft,
    commit_fenced,
    no_deadline,
    stored_result,
    with_rereads,
)
from engram_memory.services.ports.write import (
    Clock,
    DueExpiry,
    ExpireRecord,
    MemoryStore,
    MutationPlan,
    RecordEntry,
)

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

EXPIRE_TOOL = "expire"
"""The idempotency entries' ``tool``: a system operation, never an agent tool."""
SWEEPER_ACTOR = Actor(principal=SWEEPER_PRINCIPAL, agent_id="system",
                      session_id="expiry-sweeper")
EXPIRABLE_STATES = frozenset(state for (state, op) in TRANSITIONS if op is Operation.EXPIRE)
"""accepted_current, accepted_disputed, historical: what the lifecycle lets expire."""


class ExpiryStore(MemoryStore, Protocol):
    """The canonical store plus the expiry index."""

    def due_expiries(self, scope: Scope, now_ms: int, limit: int,
                     after: str | None = None) -> tuple[list[DueExpiry], str | None]:
        """Entries with ``expires_at_ms <= now_ms`` oldest first, and the next page's cursor."""
        ...

    def drop_expiry(self, scope: Scope, due: DueExpiry) -> None:
        """Delete an index entry whose record has nothing left to expire."""
        ...


class Outcome(StrEnum):
    """What happened to one due entry."""

    EXPIRED = "expired"  # committed now: one new journal event
    REPLAYED = "replayed"  # already committed (re-run or concurrent sweeper): no event
    DROPPED = "dropped"  # record gone or in a state that cannot expire: entry removed
    FAILED = "failed"  # a retriable store error: the entry stays for the next run


@dataclass
class SweepReport:
    """Counts of one run (never ids or content: this is what gets logged)."""

    expired: int = 0
    replayed: int = 0
    dropped: int = 0
    failed: int = 0
    scopes: int = 0
    more_due: bool = False

    def add(self, outcome: Outcome) -> None:
        """Count one entry's outcome."""
        setattr(self, outcome.value, getattr(self, outcome.value) + 1)

    def as_dict(self) -> dict[str, Any]:
        """The counts as a log/response mapping."""
        return {"expired": self.expired, "replayed": self.replayed, "dropped": self.dropped,
                "failed": self.failed, "scopes": self.scopes, "more_due": self.more_due}


@dataclass
class SweepBudget:
    """Bounds one run: at most ``max_records`` entries and only while time remains."""

    max_records: int
    page_size: int
    remaining_ms: Callable[[], int]
    reserve_ms: int = 0
    used: int = field(default=0, init=False)

    def allows(self) -> bool:
        """True while another entry may be processed."""
        return self.used < self.max_records and self.remaining_ms() > self.reserve_ms

    def spend(self) -> None:
        """Account for one processed entry."""
        self.used += 1

    def page_limit(self) -> int:
        """The next Query's Limit: a page, never past the record budget."""
        return max(1, min(self.page_size, self.max_records - self.used))


def expiry_intent(due: DueExpiry) -> str:
    """The intent digest of expiring one record (deterministic: re-runs replay)."""
    return digest(DigestKind.INTENT, {
        "tool": EXPIRE_TOOL, "target": due.record_id,
        "arguments": {"expires_at_ms": due.expires_at_ms,
                      "derivative_rule": due.derivative_rule},
    })


def expiry_key(record_id: str) -> str:
    """The sweeper's idempotency key for one record."""
    return f"expiry:{record_id}"


class ExpirySweeper:
    """The expiry use case (run by the scheduled sweeper Lambda)."""

    def __init__(self, *, store: ExpiryStore, clock: Clock, sleep: Sleep,
                 time_left: TimeLeft = no_deadline) -> None:
        self._store = store
        self._clock = clock
        self._sleep = sleep
        self._time_left = time_left

    def sweep(self, scopes: Iterable[Scope], budget: SweepBudget) -> SweepReport:
        """Expire what is due in every scope, a page per scope in turn, within ``budget``."""
        now_ms = self._clock.now_ms()
        cursors: dict[Scope, str | None] = {scope: None for scope in scopes}
        report = SweepReport(scopes=len(cursors))
        while cursors and budget.allows():
            for scope in list(cursors):
                if not budget.allows():
                    break
                finished, after = self._page(scope, cursors[scope], now_ms, budget, report)
                if finished:
                    del cursors[scope]
                else:
                    cursors[scope] = after
        report.more_due = bool(cursors)
        return report

    def _page(self, scope: Scope, after: str | None, now_ms: int, budget: SweepBudget,
              report: SweepReport) -> tuple[bool, str | None]:
        """One page of a scope's due entries: (scope finished, next page's cursor)."""
        entries, following = self._store.due_expiries(scope, now_ms, budget.page_limit(),
                                                       after)
        for due in entries:
            if not budget.allows():
                return False, after  # out of budget mid-page: the rest waits for a run
            budget.spend()
            report.add(self.expire_safely(scope, due))
        return following is None, following

    def expire_safely(self, scope: Scope, due: DueExpiry) -> Outcome:
        """:meth:`expire`, a store failure counted instead of ending the run."""
        try:
            return self.expire(scope, due)
        except EngramError:
            # Retriable (throttling, lost races, unknown outcome): the entry is still in
            # the index, and the next run replays or completes it.
            return Outcome.FAILED

    def expire(self, scope: Scope, due: DueExpiry) -> Outcome:
        """Expire one due record (replay when already done; drop a non-expirable entry)."""
        intent = expiry_intent(due)
        key = expiry_key(due.record_id)

        def attempt() -> Outcome:
            if stored_result(self._store, scope, SWEEPER_ACTOR.principal, key, EXPIRE_TOOL,
                             intent) is not None:
                return Outcome.REPLAYED
            record = self._store.get_record(scope, due.record_id)
            if record is None or State(record.state) not in EXPIRABLE_STATES:
                # Forgotten (or otherwise moved on): nothing to expire, only the entry.
                self._store.drop_expiry(scope, due)
                return Outcome.DROPPED
            now_ms = self._clock.now_ms()
            commit_fenced(self._store, scope,
                          lambda head: _plan(scope, due, record, intent, now_ms, head),
                          self._sleep, time_left=self._time_left)
            return Outcome.EXPIRED

        return with_rereads(attempt, self._sleep, self._time_left)


def _plan(scope: Scope, due: DueExpiry, record: RecordEntry, intent: str, now_ms: int,
          head: JournalHead) -> tuple[MutationPlan, None]:
    event = build_event(
        head, scope=scope, operation=Operation.EXPIRE.value,
        subject={"record_id": record.record_id}, from_state=record.state,
        to_state=State.EXPIRED.value, actor=SWEEPER_ACTOR, at_ms=now_ms,
        digests={"intent_digest": intent, "record_digest": record.record_digest,
                 "payload_digest": record.payload_digest},
    )
    remove_content = due.derivative_rule != RETAIN
    result = {
        "record_id": record.record_id, "operation": Operation.EXPIRE.value,
        "from_state": record.state, "to_state": State.EXPIRED.value,
        "cursor": format_cursor(event.cursor), "event_id": event.event_id,
        "event_digest": event.event_digest, "derivative_rule": due.derivative_rule,
        "content_removed": remove_content,
    }
    change = ExpireRecord(due=due, from_state=record.state, parts=record.parts,
                          remove_content=remove_content, cursor=event.cursor, at_ms=now_ms)
    plan = MutationPlan(scope=scope, principal=SWEEPER_ACTOR.principal,
                        idempotency_key=expiry_key(record.record_id), tool=EXPIRE_TOOL,
                        intent_digest=intent, result=result, head=head, event=event,
                        changes=(change,), at_ms=now_ms)
    return plan, None
