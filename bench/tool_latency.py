"""Latency of the six tools, direct vs. over MCP, and the AWS calls each one makes.

Run: ``.venv/bin/python bench/tool_latency.py [--quick] [--calls N] [--aws-delay-ms D]``.
For each tool, N
calls (default 500) (a) to the tool's Lambda handler in-process against the local moto
server and (b) through the full path: the official MCP Python SDK client → the local HTTP
endpoint → the same handler. Prints p50/p95/p99 in milliseconds, the overhead ratio
(b)/(a) at p50, and the AWS API calls per tool call (botocore ``before-call`` hook) beside
the design minimum (bench/README.md), and the **sequential round trips** per call (calls
that overlap in time count once; bench/aws_calls.py) beside the floor. ``--aws-delay-ms``
adds a fixed delay to every AWS call (5 ms ≈ DynamoDB in-region), so the latencies estimate
what the round trips cost on AWS. Preparation (fresh candidates, records, approvals,
tokens) is never inside a timed region.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from typing import Any

from aws_calls import (
    DESIGN_MINIMUM,
    PER_TERM_NOTE,
    ROUND_TRIP_FLOOR,
    AwsCallCounter,
    describe,
    total,
)
from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.local.projector_pump import drain
from harness import (
    Bench,
    capture_arguments,
    envelope_of,
    machine,
    percentile,
    silenced,
    table,
    value_of,
)

TOPICS = ("ingest queue retries", "release branch smoke suite", "cache eviction policy",
          "database failover drill", "token rotation schedule", "incident review notes")
Prepared = tuple[dict[str, Any], str | None]


class Workload:
    """Fresh, valid arguments for one call of each tool (untimed preparation)."""

    def __init__(self, bench: Bench, seeded: list[str]) -> None:
        """``seeded``: accepted record ids searchable in the projection."""
        self.bench = bench
        self.seeded = seeded
        self.n = 0

    def _text(self) -> str:
        self.n += 1
        return f"Note {self.n} on {TOPICS[self.n % len(TOPICS)]} with detail {time.time_ns()}"

    def pending(self) -> str:
        """A fresh pending candidate id."""
        envelope = self.bench.direct(Tool.CAPTURE, capture_arguments(self._text()))
        return str(value_of(envelope)["candidate_id"])

    def record(self) -> str:
        """A fresh accepted record id."""
        envelope = self.bench.direct(Tool.REQUEST_ADMISSION, {
            "candidate_id": self.pending(), "idempotency_key": f"bench-admit-{time.time_ns()}"})
        return str(value_of(envelope)["outcome"]["record_id"])

    def prepare(self, tool: Tool) -> Prepared:
        """(arguments, confirmation reference or None) for one call of ``tool``."""
        key = f"bench-{tool.value}-{time.time_ns()}"
        if tool is Tool.SEARCH:
            return {"query": TOPICS[self.n % len(TOPICS)], "purpose_ref": "purpose:bench"}, None
        if tool is Tool.GET:
            self.n += 1
            return {"record_id": self.seeded[self.n % len(self.seeded)],
                    "purpose_ref": "purpose:bench"}, None
        if tool is Tool.CAPTURE:
            return capture_arguments(self._text(), key=key), None
        if tool is Tool.REQUEST_ADMISSION:
            return {"candidate_id": self.pending(), "idempotency_key": key}, None
        field, target = (("candidate_id", self.pending()) if tool is Tool.WITHDRAW
                         else ("record_id", self.record()))
        args = {field: target, "idempotency_key": key, "reason_ref": "reason:bench"}
        return args, self.bench.approve(tool, args)


Direct = tuple[list[float], Counter[str], list[int], int]


def run_direct(bench: Bench, work: Workload, tool: Tool, calls: int,
               counter: AwsCallCounter) -> Direct:
    """Timings (ms), AWS calls made, round trips per call, errors — handler in-process."""
    timings: list[float] = []
    made: Counter[str] = Counter()
    trips: list[int] = []
    errors = 0
    for _ in range(calls):
        args, ref = work.prepare(tool)
        ctx = {"confirmation_ref": ref} if ref else {}
        with counter.measure() as measured:
            start = time.perf_counter()
            envelope = bench.direct(tool, args, **ctx)
            timings.append((time.perf_counter() - start) * 1000)
        made.update(measured.calls)
        trips.append(measured.round_trips)
        errors += not envelope["ok"]
    return timings, made, trips, errors


async def run_mcp(bench: Bench, work: Workload, tool: Tool, calls: int) -> tuple[list[float], int]:
    """Timings (ms) and errors over the full MCP path (one SDK client session)."""
    timings: list[float] = []
    errors = 0
    bearer = [bench.token()]
    async with bench.client(bearer) as client:
        for _ in range(calls):
            args, ref = work.prepare(tool)
            bearer[0] = bench.token(confirmation_ref=ref) if ref else bench.token()
            start = time.perf_counter()
            result = await client.call_tool(tool.mcp_name, args)
            timings.append((time.perf_counter() - start) * 1000)
            errors += not envelope_of(result)["ok"]
    return timings, errors


def seed(bench: Bench, records: int) -> list[str]:
    """Accepted, projected records for search and get to find."""
    work = Workload(bench, [])
    ids = [work.record() for _ in range(records)]
    drain(bench.service.settings)
    return ids


def _stats(timings: list[float]) -> list[float]:
    return [percentile(timings, q) for q in (50, 95, 99)]


def _trips(trips: list[int]) -> str:
    # min = what the design allows (calls that can overlap did); mean/max include the
    # calls where a loaded machine started a background call only after the other ended.
    mean = sum(trips) / len(trips)
    if max(trips) == min(trips):
        return f"{mean:.1f}"
    return f"{mean:.1f} (min {min(trips)}, max {max(trips)})"


def row(tool: Tool, direct: list[float], over_mcp: list[float], made: Counter[str],
        trips: list[int], errors: int) -> list[Any]:
    """One table row."""
    per_call = Counter({name: n / len(trips) for name, n in made.items()})
    return [tool.value, *_stats(direct), *_stats(over_mcp),
            percentile(over_mcp, 50) / percentile(direct, 50), f"{total(per_call):.1f}",
            describe(per_call),
            describe(DESIGN_MINIMUM[tool.value]) + PER_TERM_NOTE.get(tool.value, ""),
            _trips(trips), ROUND_TRIP_FLOOR[tool.value], errors]


def measure(tool: Tool, calls: int, records: int, delay_ms: float) -> list[Any]:
    """One tool, ``calls`` times per path, on a fresh service of its own."""
    bench = Bench()
    try:
        seeded = seed(bench, records) if tool in (Tool.SEARCH, Tool.GET) else []
        bench.pause_pumps()
        counter = AwsCallCounter(delay_ms).attach([bootstrap.dynamodb_client(),
                                                   bootstrap.kms_client()])
        work = Workload(bench, seeded)
        direct, made, trips, direct_errors = run_direct(bench, work, tool, calls, counter)
        over_mcp, mcp_errors = asyncio.run(run_mcp(bench, work, tool, calls))
    finally:
        bench.close()
    return row(tool, direct, over_mcp, made, trips, direct_errors + mcp_errors)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (5 calls per tool)")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--aws-delay-ms", type=float, default=0.0,
                        help="fixed delay added to every AWS call (e.g. 5)")
    options = parser.parse_args()
    calls = 5 if options.quick else options.calls
    # One record per topic at least, so the searched topic has hits to revalidate (the
    # design minimum is that of a search that finds something).
    records = len(TOPICS) if options.quick else 50
    with silenced():
        rows = [measure(tool, calls, records, options.aws_delay_ms) for tool in Tool]
    print(f"tool latency: {calls} calls per tool and path, "
          f"{records} searchable records for search/get, a fresh service per tool, "
          f"{options.aws_delay_ms:g} ms added per AWS call; {machine()}")
    print(table(["tool", "direct p50 ms", "p95", "p99", "MCP p50 ms", "p95", "p99",
                 "MCP/direct p50", "AWS calls", "measured", "design minimum",
                 "sequential round trips", "floor", "errors"], rows))


if __name__ == "__main__":
    main()
