"""Count the AWS API calls a piece of code makes, with a botocore ``before-call`` hook.

``before-call`` fires once per API operation (not once per HTTP retry attempt), so the
count is the number of calls the code asked for. Attach the counter to the clients the
composition root built (``bootstrap.dynamodb_client()``, ``bootstrap.kms_client()``) and
read ``snapshot()`` around the code under measurement. Shared by the benches and the
reliability tests.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

# The minimum the design needs per tool call, derived in bench/README.md ("AWS calls").
# search also needs one Query per distinct query term (its postings), shown as "+ T Query".
DESIGN_MINIMUM: dict[str, dict[str, int]] = {
    "search": {"dynamodb.GetItem": 1, "dynamodb.BatchGetItem": 2},
    "get": {"dynamodb.GetItem": 1, "dynamodb.BatchGetItem": 1},
    "capture": {"dynamodb.GetItem": 2, "kms.GenerateDataKey": 1,
                "dynamodb.TransactWriteItems": 1},
    "request_admission": {"dynamodb.GetItem": 7, "kms.Decrypt": 1,
                          "dynamodb.TransactWriteItems": 1},
    "withdraw": {"dynamodb.GetItem": 3, "dynamodb.TransactWriteItems": 1},
    "forget": {"dynamodb.GetItem": 3, "dynamodb.TransactWriteItems": 1},
}
PER_TERM_NOTE = {"search": " + T Query"}


class AwsCallCounter:
    """Thread-safe tally of ``service.Operation`` names seen by the attached clients.

    Calls are tallied per calling thread: a shared client also serves background threads
    (the local projector pump), whose calls are not the measured tool call's.
    """

    def __init__(self) -> None:
        """An empty tally attached to nothing."""
        self._counts: dict[int, Counter[str]] = {}
        self._lock = threading.Lock()
        self._attached: list[Any] = []

    def _on_call(self, model: Any, **_: Any) -> None:
        name = f"{model.service_model.endpoint_prefix}.{model.name}"
        with self._lock:
            self._counts.setdefault(threading.get_ident(), Counter())[name] += 1

    def attach(self, clients: Iterable[Any]) -> AwsCallCounter:
        """Start counting the calls of each boto3 client (idempotent per client)."""
        for client in clients:
            if any(client is seen for seen in self._attached):
                continue
            client.meta.events.register("before-call.*.*", self._on_call,
                                        unique_id=f"aws-call-counter-{id(self)}")
            self._attached.append(client)
        return self

    def detach(self) -> None:
        """Stop counting."""
        for client in self._attached:
            client.meta.events.unregister("before-call.*.*",
                                          unique_id=f"aws-call-counter-{id(self)}")
        self._attached.clear()

    def snapshot(self, all_threads: bool = False) -> Counter[str]:
        """A copy of this thread's tally so far (or every thread's)."""
        with self._lock:
            if all_threads:
                return sum(self._counts.values(), Counter())
            return Counter(self._counts.get(threading.get_ident(), Counter()))

    @contextmanager
    def measure(self) -> Iterator[Counter[str]]:
        """Yield a Counter that, on exit, holds the calls this thread made in the block."""
        before = self.snapshot()
        delta: Counter[str] = Counter()
        try:
            yield delta
        finally:
            delta.update(self.snapshot() - before)


def total(calls: Counter[str] | dict[str, int]) -> int:
    """The number of calls in a tally."""
    return sum(calls.values())


def describe(calls: Counter[str] | dict[str, int]) -> str:
    """``1 GetItem + 1 TransactWriteItems`` style text, stable order."""
    parts = [f"{n:g} {name.split('.', 1)[1]}" for name, n in sorted(calls.items()) if n]
    return " + ".join(parts) if parts else "none"
