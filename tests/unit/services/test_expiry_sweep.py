"""The expiry sweeper's scheduling: budgets, fairness between workspaces, failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engram_memory.domain.context import Scope
from engram_memory.domain.errors import StoreUnavailable
from engram_memory.domain.journal import JournalHead
from engram_memory.services.expiry import (
    ExpirySweeper,
    SweepBudget,
    SweepReport,
    expiry_intent,
)
from engram_memory.services.ports.write import (
    DueExpiry,
    ExpireRecord,
    IdempotencyEntry,
    MutationPlan,
    RecordEntry,
)

A, B = Scope("t", "a"), Scope("t", "b")
NOW = 1_000_000


@dataclass
class _IndexStore:
    """An in-memory expiry index and record states (the store port the sweeper needs)."""

    entries: dict[Scope, list[DueExpiry]] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)
    committed: list[str] = field(default_factory=list)
    idempotency: dict[str, IdempotencyEntry] = field(default_factory=dict)

    def add(self, scope: Scope, record_id: str, at: int = NOW - 1) -> None:
        self.entries.setdefault(scope, []).append(DueExpiry(record_id, at, "make-ineligible"))
        self.entries[scope].sort(key=lambda e: (e.expires_at_ms, e.record_id))
        self.states[record_id] = "accepted_current"

    def due_expiries(self, scope: Scope, now_ms: int, limit: int,
                     after: str | None = None) -> tuple[list[DueExpiry], str | None]:
        due = [e for e in self.entries.get(scope, []) if e.expires_at_ms <= now_ms
               and (after is None or e.record_id > after)]
        page = due[:limit]
        return page, (page[-1].record_id if len(due) > limit else None)

    def drop_expiry(self, scope: Scope, due: DueExpiry) -> None:
        self.entries[scope].remove(due)

    def get_idempotency(self, scope: Scope, principal: str, key: str) -> IdempotencyEntry | None:
        return self.idempotency.get(key)

    def get_record(self, scope: Scope, record_id: str) -> RecordEntry | None:
        state = self.states.get(record_id)
        return None if state is None else RecordEntry(record_id, state, "sha256:r",
                                                      "sha256:p", 0)

    def journal_head(self, scope: Scope) -> JournalHead:
        return JournalHead(len(self.committed))

    def commit(self, plan: MutationPlan) -> None:
        [change] = plan.changes
        assert isinstance(change, ExpireRecord)
        if change.due.record_id in self.broken:
            raise StoreUnavailable
        self.states[change.due.record_id] = "expired"
        self.entries[plan.scope].remove(change.due)
        self.idempotency[plan.idempotency_key] = IdempotencyEntry(
            plan.tool, plan.intent_digest, dict(plan.result))
        self.committed.append(change.due.record_id)


class _Clock:
    def now_ms(self) -> int:
        return NOW


def _sweep(store: _IndexStore, scopes: list[Scope], **budget: Any) -> SweepReport:
    settings = {"max_records": 100, "page_size": 10, "remaining_ms": lambda: 60_000,
                "reserve_ms": 1_000, **budget}
    sweeper = ExpirySweeper(store=store, clock=_Clock(), sleep=lambda _: None)
    return sweeper.sweep(scopes, SweepBudget(**settings))


def test_the_record_budget_stops_the_run_and_reports_more_due() -> None:
    store = _IndexStore()
    for n in range(5):
        store.add(A, f"mem_a{n}")
    report = _sweep(store, [A], max_records=3, page_size=2)
    assert (report.expired, report.more_due) == (3, True)
    assert store.committed == ["mem_a0", "mem_a1", "mem_a2"]


def test_a_busy_workspace_does_not_starve_the_others() -> None:
    store = _IndexStore()
    for n in range(6):
        store.add(A, f"mem_a{n}")
    store.add(B, "mem_b0")
    report = _sweep(store, [A, B], max_records=3, page_size=2)
    assert "mem_b0" in store.committed
    assert report.expired == 3


def test_no_record_is_started_without_time_left() -> None:
    store = _IndexStore()
    store.add(A, "mem_a0")
    report = _sweep(store, [A], remaining_ms=lambda: 999, reserve_ms=1_000)
    assert (report.expired, report.more_due) == (0, True)
    assert store.committed == []


def test_a_failing_record_is_counted_and_the_run_goes_on() -> None:
    store = _IndexStore()
    for n in range(4):
        store.add(A, f"mem_a{n}")
    store.broken.add("mem_a1")
    report = _sweep(store, [A], page_size=2)
    assert (report.expired, report.failed, report.more_due) == (3, 1, False)
    assert [e.record_id for e in store.entries[A]] == ["mem_a1"]


def test_entries_not_yet_due_are_left_alone() -> None:
    store = _IndexStore()
    store.add(A, "mem_later", at=NOW + 1)
    store.add(A, "mem_now", at=NOW)
    report = _sweep(store, [A])
    assert store.committed == ["mem_now"]
    assert report.as_dict() == {"expired": 1, "replayed": 0, "dropped": 0, "failed": 0,
                                "scopes": 1, "more_due": False}


def test_an_entry_whose_record_cannot_expire_is_dropped_without_a_commit() -> None:
    store = _IndexStore()
    store.add(A, "mem_gone")
    store.states["mem_gone"] = "tombstoned"
    report = _sweep(store, [A])
    assert (report.dropped, report.expired, store.committed) == (1, 0, [])
    assert store.entries[A] == []


def test_the_page_limit_never_exceeds_the_remaining_record_budget() -> None:
    budget = SweepBudget(max_records=3, page_size=25, remaining_ms=lambda: 1)
    assert budget.page_limit() == 3
    budget.spend()
    budget.spend()
    assert budget.page_limit() == 1


def test_the_expiry_intent_is_deterministic_per_record_and_expiry() -> None:
    due = DueExpiry("mem_a", 5, "make-ineligible")
    assert expiry_intent(due) == expiry_intent(DueExpiry("mem_a", 5, "make-ineligible"))
    assert expiry_intent(due) != expiry_intent(DueExpiry("mem_b", 5, "make-ineligible"))
    assert expiry_intent(due) != expiry_intent(DueExpiry("mem_a", 6, "make-ineligible"))
