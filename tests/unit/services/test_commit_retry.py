"""The retry policy of a commit that lost the journal head (issue 25 item 3).

Bounded in attempts, full-jitter exponential waits, and never past the invocation's time:
the agent sees FENCE_LOST only once the attempts or the time are used up; a taken key, a
moved state and a DIGEST_CONFLICT are never retried into a success here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from engram_memory import invocation_time
from engram_memory.contract.registry import TOOL_MODELS
from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.errors import DigestConflict, FenceLost
from engram_memory.domain.journal import JournalHead
from engram_memory.local.inprocess_invoker import LocalLambdaContext
from engram_memory.runtime import ToolBinding, lambda_entry, run_tool
from engram_memory.services.pipeline import (
    HEAD_POLICY,
    REREAD_POLICY,
    Backoff,
    RetryPolicy,
    commit_fenced,
    with_rereads,
)
from engram_memory.services.ports.write import CommitConflict, ConflictKind

from tests.fixtures.contract_fixtures import valid_capture_args
from tests.support.events import make_event

SCOPE = Scope("tenant-a", "ws-main")
POLICY = RetryPolicy(attempts=10, base_s=0.01, cap_s=0.08, reserve_s=0.5)


@dataclass
class FakeTime:
    """A monotonic clock that only sleeping moves; ``left`` = the invocation's time."""

    now: float = 0.0
    ends_at: float | None = None
    slept: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def left(self) -> float | None:
        return None if self.ends_at is None else self.ends_at - self.now


class _Highest:
    """A jitter that always draws the top of its range (shows the ceilings)."""

    def uniform(self, a: float, b: float) -> float:
        return b


def _loop(backoff: Backoff) -> int:
    """Ask for attempts until refused; how many were granted after the first."""
    granted = 0
    while backoff.again():
        granted += 1
    return granted


def test_attempts_are_bounded_when_nothing_bounds_the_time() -> None:
    time = FakeTime()
    backoff = Backoff(POLICY, time.sleep, time.left)
    assert _loop(backoff) == POLICY.attempts - 1
    assert backoff.attempts == POLICY.attempts
    assert len(time.slept) == POLICY.attempts - 1


def test_waits_double_from_the_base_up_to_the_cap() -> None:
    time = FakeTime()
    _loop(Backoff(POLICY, time.sleep, time.left, jitter=_Highest()))
    assert time.slept[:5] == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.08])
    assert max(time.slept) == pytest.approx(POLICY.cap_s)


def test_waits_are_jittered_over_the_whole_range_below_each_ceiling() -> None:
    waits: list[list[float]] = []
    for seed in range(40):
        time = FakeTime()
        _loop(Backoff(POLICY, time.sleep, time.left, jitter=random.Random(seed)))
        waits.append(time.slept)
    for n in range(POLICY.attempts - 1):
        drawn = [w[n] for w in waits]
        assert all(0.0 <= d <= POLICY.ceiling(n) for d in drawn)
        # Full jitter: the writers spread over the range instead of retrying in step.
        assert len(set(drawn)) == len(drawn)
        assert min(drawn) < 0.25 * POLICY.ceiling(n)
        assert max(drawn) > 0.75 * POLICY.ceiling(n)


def test_no_wait_ends_less_than_the_reserve_before_the_deadline() -> None:
    time = FakeTime(ends_at=0.7)
    backoff = Backoff(POLICY, time.sleep, time.left, jitter=_Highest())
    granted = _loop(backoff)
    assert 0 < granted < POLICY.attempts - 1  # the time, not the attempts, ended it
    assert time.now <= 0.7 - POLICY.reserve_s
    # The refused wait would have ended inside the reserve.
    assert time.left() - POLICY.ceiling(len(time.slept)) < POLICY.reserve_s  # type: ignore[operator]


def test_an_invocation_already_inside_its_reserve_never_waits() -> None:
    time = FakeTime(ends_at=POLICY.reserve_s - 0.01)
    backoff = Backoff(POLICY, time.sleep, time.left)
    assert backoff.again() is False
    assert backoff.again(wait=False) is False
    assert time.slept == []


class _ContendedStore:
    """A store port whose head moves before each of the first ``conflicts`` commits."""

    def __init__(self, conflicts: int, kinds: frozenset[ConflictKind] = frozenset(
            {ConflictKind.HEAD})) -> None:
        self.conflicts = conflicts
        self.kinds = kinds
        self.head = 0
        self.commits = 0

    def journal_head(self, scope: Scope) -> JournalHead:
        return JournalHead(self.head)

    def commit(self, plan: Any) -> None:
        self.commits += 1
        if self.conflicts > 0:
            self.conflicts -= 1
            self.head += 1
            raise CommitConflict(self.kinds)


def test_a_head_contended_past_the_old_eight_attempts_still_commits() -> None:
    # Before issue 25 the eighth lost commit answered FENCE_LOST whatever time was left.
    store = _ContendedStore(conflicts=20)
    time = FakeTime(ends_at=30.0)
    built: list[int] = []
    value = commit_fenced(store, SCOPE, lambda head: (None, built.append(head.cursor) or
                                                      head.cursor),
                          time.sleep, time_left=time.left)
    assert value == 20
    assert store.commits == 21
    assert built == list(range(21))  # every attempt rebuilt on the head it read


def test_a_head_that_never_settles_is_fence_lost_after_the_attempts() -> None:
    store = _ContendedStore(conflicts=10**6)
    with pytest.raises(FenceLost):
        commit_fenced(store, SCOPE, lambda head: (None, None), lambda _: None)
    assert store.commits == HEAD_POLICY.attempts


def test_a_head_that_never_settles_is_fence_lost_before_the_deadline() -> None:
    store = _ContendedStore(conflicts=10**6)
    time = FakeTime(ends_at=3.0)
    with pytest.raises(FenceLost):
        commit_fenced(store, SCOPE, lambda head: (None, None), time.sleep, time_left=time.left)
    assert time.now <= 3.0 - HEAD_POLICY.reserve_s
    assert store.commits < HEAD_POLICY.attempts


@pytest.mark.parametrize("kinds", [{ConflictKind.IDEMPOTENCY},
                                   {ConflictKind.IDEMPOTENCY, ConflictKind.HEAD},
                                   {ConflictKind.STATE}])
def test_a_taken_key_or_a_moved_state_goes_back_to_the_caller_at_once(
        kinds: set[ConflictKind]) -> None:
    store = _ContendedStore(conflicts=1, kinds=frozenset(kinds))
    with pytest.raises(CommitConflict):
        commit_fenced(store, SCOPE, lambda head: (None, None), lambda _: None)
    assert store.commits == 1


def test_a_digest_conflict_is_never_retried() -> None:
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise DigestConflict

    with pytest.raises(DigestConflict):
        with_rereads(attempt, lambda _: None)
    assert calls == [1]


def test_a_rerun_after_a_taken_key_answers_what_its_read_finds() -> None:
    answers: list[Any] = [CommitConflict(frozenset({ConflictKind.IDEMPOTENCY})),
                          {"replayed": True}]

    def attempt() -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert with_rereads(attempt, lambda _: None) == {"replayed": True}


def test_reruns_are_bounded_too() -> None:
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise CommitConflict(frozenset({ConflictKind.STATE}))

    with pytest.raises(FenceLost):
        with_rereads(attempt, lambda _: None)
    assert len(calls) == REREAD_POLICY.attempts


# --- the time a tool invocation has: the runtime binds it -----------------------------------


class _TimeReadingService:
    def __init__(self) -> None:
        self.seen: list[float | None] = []

    def execute(self, ctx: InvocationContext, args: Any, /) -> dict[str, Any]:
        self.seen.append(invocation_time.seconds_left())
        return {}


class _LambdaContext(LocalLambdaContext):
    """A Lambda context with 2.5 s left."""

    def get_remaining_time_in_millis(self) -> int:
        return 2_500


def test_the_use_case_sees_the_earlier_of_the_host_deadline_and_the_lambda_end() -> None:
    service = _TimeReadingService()
    binding = ToolBinding(TOOL_MODELS[Tool.CAPTURE], lambda: service)
    event = make_event(Tool.CAPTURE, valid_capture_args(), deadline_ms=1_000 + 4_000)
    run_tool(binding, event, now_ms=lambda: 1_000, serves=lambda scope: True)
    assert service.seen[-1] == pytest.approx(4.0, abs=0.5)  # the host's deadline

    # Every tool Lambda's decorator stack binds the Lambda's own end around the handler.
    entry = lambda_entry(lambda event, context: {"left": invocation_time.seconds_left()})
    with invocation_time.bound(60.0):  # an outer bound that ends later does not widen it
        left = entry({}, _LambdaContext("capture"))["left"]
        assert invocation_time.seconds_left() > 50  # type: ignore[operator]
    assert left == pytest.approx(2.5, abs=0.5)
    with invocation_time.bound(1.0):  # nor does the Lambda widen an earlier one
        assert entry({}, _LambdaContext("capture"))["left"] <= 1.0


def test_outside_an_invocation_nothing_bounds_the_time() -> None:
    assert invocation_time.seconds_left() is None
