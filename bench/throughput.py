"""Captures/s and searches/s with 1, 4 and 16 concurrent MCP clients, bounded in time.

Run: ``.venv/bin/python bench/throughput.py [--quick] [--seconds S]``. Each level starts
a fresh local service, seeds searchable records, then runs C official MCP SDK clients
(each its own session over HTTP) for S seconds (default 15) doing captures, then again
doing searches. Counts successes and errors (any non-ok envelope or protocol failure).
The clients share this process with the service (one GIL): the numbers are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from typing import Any

from engram_memory.domain.context import Tool
from engram_memory.local.projector_pump import drain
from harness import Bench, capture_arguments, envelope_of, machine, silenced, table, value_of

LEVELS = (1, 4, 16)
QUERIES = ("ingest queue retries", "release branch smoke suite", "cache eviction policy",
           "database failover drill")


async def client_loop(bench: Bench, kind: str, until: float, counts: Counter[str],
                      worker: int) -> None:
    """One client: call the tool until the deadline, tallying ok and each error code."""
    bearer = [bench.token()]
    n = 0
    async with bench.client(bearer) as client:
        while time.monotonic() < until:
            n += 1
            bearer[0] = bench.token()
            if kind == "capture":
                name, args = Tool.CAPTURE.mcp_name, capture_arguments(
                    f"Worker {worker} note {n} on {QUERIES[n % len(QUERIES)]}",
                    key=f"tp-{worker}-{n}-{time.time_ns()}")
            else:
                name, args = Tool.SEARCH.mcp_name, {"query": QUERIES[n % len(QUERIES)],
                                                    "purpose_ref": "purpose:bench"}
            try:
                envelope = envelope_of(await client.call_tool(name, args))
                counts["ok" if envelope["ok"] else envelope["error"]["code"]] += 1
            except Exception:  # a protocol failure counts as an error, the run goes on
                counts["protocol failure"] += 1


async def run_level(bench: Bench, kind: str, clients: int, seconds: float) -> dict[str, Any]:
    """C clients for ``seconds``: calls/s, successes, and the errors by code."""
    counts: Counter[str] = Counter()
    start = time.monotonic()
    until = start + seconds
    await asyncio.gather(*(client_loop(bench, kind, until, counts, w) for w in range(clients)))
    elapsed = time.monotonic() - start
    ok = counts.pop("ok", 0)
    return {"per_s": ok / elapsed, "ok": ok, "errors": errors_cell(counts)}


def errors_cell(counts: Counter[str]) -> str:
    """``0``, or the total followed by each code's count: ``9 (FENCE_LOST 9)``."""
    if not counts:
        return "0"
    detail = ", ".join(f"{code} {n}" for code, n in counts.most_common())
    return f"{sum(counts.values())} ({detail})"


def seed(bench: Bench, records: int) -> None:
    """Searchable records (admitted and projected) so searches have something to rank."""
    for n in range(records):
        captured = value_of(bench.direct(Tool.CAPTURE, capture_arguments(
            f"Seed {n}: {QUERIES[n % len(QUERIES)]} decision")))
        value_of(bench.direct(Tool.REQUEST_ADMISSION, {
            "candidate_id": captured["candidate_id"],
            "idempotency_key": f"throughput-seed-{n:04d}-admit"}))
    drain(bench.service.settings)


def main() -> None:
    """Measure every level and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (1 s per level)")
    parser.add_argument("--seconds", type=float, default=15.0)
    options = parser.parse_args()
    seconds = 1.0 if options.quick else options.seconds
    rows = []
    for clients in LEVELS:
        with silenced():
            bench = Bench()
            try:
                seed(bench, 3 if options.quick else 50)
                captures = asyncio.run(run_level(bench, "capture", clients, seconds))
                searches = asyncio.run(run_level(bench, "search", clients, seconds))
            finally:
                bench.close()
        rows.append([clients, captures["per_s"], captures["ok"], captures["errors"],
                     searches["per_s"], searches["ok"], searches["errors"]])
    print(f"throughput over MCP: {seconds:g} s per level and tool, a fresh service per "
          f"level; {machine()}")
    print(table(["clients", "captures/s", "captures ok", "capture errors", "searches/s",
                 "searches ok", "search errors"], rows))


if __name__ == "__main__":
    main()
