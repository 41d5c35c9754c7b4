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

# The minimum the design needs per tool call (docs: bench/README.md, "AWS calls").
DESIGN_MINIMUM: dict[str, dict[str, int]] = {
    "search": {"dynamodb.Query": 1},
    "get": {"dynamodb.GetItem": 1},
    "capture": {"dynamodb.GetItem": 1, "kms.GenerateDataKey": 1,
                "dynamodb.TransactWriteItems": 1},
    "request_admission": {"dynamodb.GetItem": 4, "kms.Decrypt": 1,
                          "dynamodb.TransactWriteItems": 1},
    "withdraw": {"dynamodb.GetItem": 2, "dynamodb.TransactWriteItems": 1},
    "forget": {"dynamodb.GetItem": 2, "dynamodb.TransactWriteItems": 1},
}


class AwsCallCounter:
    """Thread-safe tally of ``service.Operation`` names seen by the attached clients."""

    def __init__(self) -> None:
        """An empty tally attached to nothing."""
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._attached: list[Any] = []

    def _on_call(self, model: Any, **_: Any) -> None:
        name = f"{model.service_model.endpoint_prefix}.{model.name}"
        with self._lock:
            self._counts[name] += 1

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

    def snapshot(self) -> Counter[str]:
        """A copy of the tally so far."""
        with self._lock:
            return Counter(self._counts)

    @contextmanager
    def measure(self) -> Iterator[Counter[str]]:
        """Yield a Counter that, on exit, holds the calls made inside the block."""
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
