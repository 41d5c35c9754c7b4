"""Count the AWS API calls a piece of code makes, with a botocore ``before-call`` hook.

``before-call`` fires once per API operation (not once per HTTP retry attempt), so the
count is the number of calls the code asked for. Attach the counter to the clients the
composition root built (``bootstrap.dynamodb_client()``, ``bootstrap.kms_client()``) and
read ``snapshot()`` around the code under measurement. Shared by the benches and the
reliability tests.
"""

from __future__ import annotations

import threading
import time
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


class RoundTripRecorder:
    """Times every call of the attached clients, from its start to ``after-call``.

    The start is ``before-parameter-build``, the first event of an API call (before the
    request is validated and serialized), so a call's time includes its client-side work.

    :func:`sequential_round_trips` of what it recorded is the number of calls that had to
    wait for one another: calls running at the same time (a search's postings Queries on
    its reader pool) count once. Every thread is recorded, so measure with nothing else
    using the clients (the projector pump paused).
    """

    def __init__(self, network_latency_s: float = 0.0) -> None:
        """Nothing recorded, attached to nothing.

        ``network_latency_s``: wait this long in every call before it is sent, releasing
        the GIL as a network round trip does. In-process moto answers while holding the
        GIL, so without it threads that call together are scheduled one after another
        and the chain measures the interpreter, not the code's call structure.
        """
        self._latency = network_latency_s
        self._lock = threading.Lock()
        self._open: dict[int, tuple[str, float]] = {}
        self.calls: list[tuple[str, float, float]] = []
        self._attached: list[Any] = []

    def _before(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self._open[id(context)] = (model.name, time.perf_counter())

    def _send(self, **_: Any) -> None:
        if self._latency:
            time.sleep(self._latency)

    def _after(self, context: dict[str, Any], **_: Any) -> None:
        end = time.perf_counter()
        with self._lock:
            opened = self._open.pop(id(context), None)
            if opened is not None:
                self.calls.append((opened[0], opened[1], end))

    def attach(self, clients: Iterable[Any]) -> RoundTripRecorder:
        """Start timing the calls of each boto3 client."""
        for client in clients:
            events = client.meta.events
            events.register("before-parameter-build.*.*", self._before,
                            unique_id=f"rtt-b-{id(self)}")
            events.register("before-call.*.*", self._send, unique_id=f"rtt-s-{id(self)}")
            events.register("after-call.*.*", self._after, unique_id=f"rtt-a-{id(self)}")
            self._attached.append(client)
        return self

    def detach(self) -> None:
        """Stop timing."""
        for client in self._attached:
            client.meta.events.unregister("before-parameter-build.*.*",
                                          unique_id=f"rtt-b-{id(self)}")
            client.meta.events.unregister("before-call.*.*", unique_id=f"rtt-s-{id(self)}")
            client.meta.events.unregister("after-call.*.*", unique_id=f"rtt-a-{id(self)}")
        self._attached.clear()

    @contextmanager
    def measure(self) -> Iterator[list[tuple[str, float, float]]]:
        """Yield a list that, on exit, holds the calls (name, start, end) made in the block."""
        with self._lock:
            start = len(self.calls)
        made: list[tuple[str, float, float]] = []
        try:
            yield made
        finally:
            with self._lock:
                made.extend(self.calls[start:])


def sequential_round_trips(calls: Iterable[tuple[str, float, float]]) -> int:
    """The longest chain of calls each starting after the previous one ended.

    (The largest set of pairwise non-overlapping intervals, greedy by end time.) Calls in
    flight together are one round trip; calls one after another are one each.
    """
    chain = 0
    last_end = float("-inf")
    for _, start, end in sorted(calls, key=lambda call: call[2]):
        if start >= last_end:
            chain += 1
            last_end = end
    return chain
