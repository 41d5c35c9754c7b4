"""Count the AWS API calls a piece of code makes, and how many round trips they cost.

A botocore ``before-call`` hook fires once per API operation (not once per HTTP retry
attempt), so the count is the number of calls the code asked for; with ``after-call`` it
gives each call's interval. Calls that overlap in time ran concurrently, so the number of
**sequential round trips** of a measured block is the number of groups of overlapping
intervals (a call that starts after every earlier one ended waited for them). An optional
fixed delay per call (``delay_ms``, slept in ``before-call``) stands in for the network
round trip to AWS, so latencies estimate AWS and concurrent calls certainly overlap.

Calls are attributed to the ``measure()`` block through a context variable: calls a tool
runs in the background (``engram_memory.concurrency`` copies the caller's context) count
as its own, and other threads sharing the client (the local projector pump) do not.
Attach the counter to the clients the composition root built
(``bootstrap.dynamodb_client()``, ``bootstrap.kms_client()``).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# The minimum the design needs per tool call, derived in bench/README.md ("AWS calls").
# search also needs one Query per distinct query term (its postings), shown as "+ T Query".
DESIGN_MINIMUM: dict[str, dict[str, int]] = {
    "search": {"dynamodb.GetItem": 1, "dynamodb.BatchGetItem": 2},
    "get": {"dynamodb.GetItem": 1, "dynamodb.Query": 1},
    "capture": {"dynamodb.BatchGetItem": 1, "kms.GenerateDataKey": 1,
                "dynamodb.TransactWriteItems": 1},
    "request_admission": {"dynamodb.BatchGetItem": 2, "kms.Decrypt": 1,
                          "dynamodb.TransactWriteItems": 1},
    # The approval before the target (issue 26 item 2), then the target, then the commit.
    "withdraw": {"dynamodb.BatchGetItem": 2, "dynamodb.TransactWriteItems": 1},
    "forget": {"dynamodb.BatchGetItem": 2, "dynamodb.TransactWriteItems": 1},
}
# The fewest sequential round trips each tool's reads and writes allow, derived in
# docs/performance.md ("Round trips"): a call waits only for the calls it depends on.
ROUND_TRIP_FLOOR: dict[str, int] = {
    "search": 3, "get": 2, "capture": 2, "request_admission": 3, "withdraw": 3, "forget": 3,
}
PER_TERM_NOTE = {"search": " + T Query"}


_BLOCK: contextvars.ContextVar[Measured | None] = contextvars.ContextVar(
    "aws_call_block", default=None)


@dataclass
class Measured:
    """The AWS calls one measured block made, and their (start, end) intervals."""

    calls: Counter[str] = field(default_factory=Counter)
    intervals: list[tuple[float, float]] = field(default_factory=list)

    @property
    def round_trips(self) -> int:
        """Groups of overlapping calls: the sequential round trips the block waited for."""
        groups, reach = 0, float("-inf")
        for start, end in sorted(self.intervals):
            if start >= reach:
                groups += 1
            reach = max(reach, end)
        return groups


class AwsCallCounter:
    """Tallies the ``service.Operation`` calls of the attached clients per measured block."""

    def __init__(self, delay_ms: float = 0.0) -> None:
        """Attached to nothing; ``delay_ms`` is added to every call (simulated latency)."""
        self._delay_s = delay_ms / 1000
        self._lock = threading.Lock()
        self._attached: list[Any] = []
        self._local = threading.local()

    def _on_call(self, model: Any, **_: Any) -> None:
        if self._delay_s:
            time.sleep(self._delay_s)
        block = _BLOCK.get()
        self._local.started = (block, time.perf_counter())
        if block is not None:
            with self._lock:
                block.calls[f"{model.service_model.endpoint_prefix}.{model.name}"] += 1

    def _on_done(self, **_: Any) -> None:
        block, start = getattr(self._local, "started", (None, 0.0))
        self._local.started = (None, 0.0)
        if block is not None:
            with self._lock:
                block.intervals.append((start, time.perf_counter()))

    def attach(self, clients: Iterable[Any]) -> AwsCallCounter:
        """Start counting the calls of each boto3 client (idempotent per client)."""
        for client in clients:
            if any(client is seen for seen in self._attached):
                continue
            events = client.meta.events
            events.register_first("before-call.*.*", self._on_call,
                                  unique_id=f"aws-call-counter-{id(self)}")
            for done in ("after-call.*.*", "after-call-error.*.*"):
                events.register(done, self._on_done,
                                unique_id=f"aws-call-counter-{done}-{id(self)}")
            self._attached.append(client)
        return self

    def detach(self) -> None:
        """Stop counting."""
        for client in self._attached:
            events = client.meta.events
            events.unregister("before-call.*.*", unique_id=f"aws-call-counter-{id(self)}")
            for done in ("after-call.*.*", "after-call-error.*.*"):
                events.unregister(done, unique_id=f"aws-call-counter-{done}-{id(self)}")
        self._attached.clear()

    @contextmanager
    def measure(self) -> Iterator[Measured]:
        """Yield what the calls made in the block (and its background calls) add up to."""
        block = Measured()
        token = _BLOCK.set(block)
        try:
            yield block
        finally:
            _BLOCK.reset(token)


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
        the GIL as a network round trip does. moto in the caller's process (mock_aws, most
        benches) answers while holding the GIL, so without it threads that call together
        are scheduled one after another and the chain measures the interpreter, not the
        code's call structure.
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
