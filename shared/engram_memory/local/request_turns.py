"""Whose turn it is on the local service's one-request-at-a-time DynamoDB.

The local moto server serves one DynamoDB request at a time (``moto_dynamodb``). A plain
lock hands the next turn to whichever waiting thread the OS wakes, so one search's burst of
up to 32 postings Queries could keep another workspace's two-item ``get`` waiting for all
of them (measured: 26 → 1,289 ms p50 beside back-to-back 64-word searches, most of it
spent waiting for that lock). Here a short request (a point read or write) waiting goes
before a waiting Query or Scan: shortest job first, which keeps every point call's wait to
about one Query. So that a stream of point calls cannot starve a long one, a waiting long
request is passed over at most ``patience`` times in a row.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

LONG_ACTIONS = frozenset({"Query", "Scan"})
"""DynamoDB actions whose cost grows with what they return; every other one is short."""


def is_long(action: str) -> bool:
    """Whether a DynamoDB ``action`` (e.g. "Query") waits behind the short ones."""
    return action in LONG_ACTIONS


class RequestTurns:
    """One holder at a time; short requests first, a long one passed over boundedly.

    Re-entrant for the thread that holds the turn, like the lock it replaces.
    """

    def __init__(self, patience: int = 4) -> None:
        if patience < 0:
            raise ValueError("patience must not be negative")
        self._patience = patience
        self._changed = threading.Condition()
        self._holder: int | None = None
        self._depth = 0
        self._short_waiting = 0
        self._long_waiting = 0
        self._long_passed_over = 0

    @contextmanager
    def turn(self, *, long: bool) -> Iterator[None]:
        """Hold the turn for the body of the ``with``; waits for it first."""
        self._take(long)
        try:
            yield
        finally:
            self._give_back()

    def waiting(self) -> tuple[int, int]:
        """How many short and long requests are waiting for a turn now."""
        with self._changed:
            return self._short_waiting, self._long_waiting

    def _take(self, long: bool) -> None:
        me = threading.get_ident()
        with self._changed:
            if self._holder == me:
                self._depth += 1
                return
            self._count_waiting(long, +1)
            while not self._may_go(long):
                self._changed.wait()
            self._count_waiting(long, -1)
            if long:
                self._long_passed_over = 0
            elif self._long_waiting:
                self._long_passed_over += 1
            self._holder, self._depth = me, 1

    def _give_back(self) -> None:
        with self._changed:
            self._depth -= 1
            if self._depth == 0:
                self._holder = None
                self._changed.notify_all()

    def _count_waiting(self, long: bool, step: int) -> None:
        if long:
            self._long_waiting += step
        else:
            self._short_waiting += step

    def _may_go(self, long: bool) -> bool:
        if self._holder is not None:
            return False
        long_is_due = self._long_waiting > 0 and self._long_passed_over >= self._patience
        if long:
            return self._short_waiting == 0 or long_is_due
        return not long_is_due
