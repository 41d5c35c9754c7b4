"""The local DynamoDB's turns: point calls go before waiting Queries, boundedly."""

from __future__ import annotations

import threading
import time

import pytest
from engram_memory.local.request_turns import RequestTurns, is_long


def _queue_behind_holder(turns: RequestTurns, kinds: list[bool]) -> list[str]:
    """Hold the turn, queue one waiter per kind (True = long), release; the order served."""
    served: list[str] = []
    release = threading.Event()
    held = threading.Event()

    def holder() -> None:
        with turns.turn(long=False):
            held.set()
            release.wait(5)

    def waiter(long: bool) -> None:
        with turns.turn(long=long):
            served.append("long" if long else "short")

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert held.wait(5)
    for count, long in enumerate(kinds, start=1):
        thread = threading.Thread(target=waiter, args=(long,))
        thread.start()
        threads.append(thread)
        _wait_until(lambda count=count: sum(turns.waiting()) == count)
    release.set()
    for thread in threads:
        thread.join(5)
    return served


def _wait_until(condition: object) -> None:
    deadline = time.monotonic() + 5
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "waiters never queued"
        time.sleep(0.001)


def test_a_point_call_goes_before_queries_that_were_waiting_longer() -> None:
    served = _queue_behind_holder(RequestTurns(patience=4), [True, True, True, False])
    assert served == ["short", "long", "long", "long"]


def test_a_waiting_query_is_passed_over_at_most_patience_times() -> None:
    served = _queue_behind_holder(RequestTurns(patience=2), [True, False, False, False, False])
    assert served == ["short", "short", "long", "short", "short"]


def test_without_patience_turns_are_taken_as_they_come_free() -> None:
    served = _queue_behind_holder(RequestTurns(patience=0), [True, False])
    assert served == ["long", "short"]


def test_the_holder_may_take_the_turn_again_and_one_at_a_time_holds() -> None:
    turns = RequestTurns()
    inside = 0
    most_inside = 0
    guard = threading.Lock()

    def call() -> None:
        nonlocal inside, most_inside
        with turns.turn(long=False), turns.turn(long=True):
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.001)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert most_inside == 1
    assert turns.waiting() == (0, 0)


@pytest.mark.parametrize(("action", "long"), [("Query", True), ("Scan", True),
                                              ("GetItem", False), ("BatchGetItem", False),
                                              ("TransactWriteItems", False)])
def test_only_queries_and_scans_wait_behind_point_calls(action: str, long: bool) -> None:
    assert is_long(action) is long
