"""Captures/s and searches/s with 1, 4, 16 and 32 concurrent MCP clients, bounded in time.

Run: ``.venv/bin/python bench/throughput.py [--quick] [--seconds S] [--writers 1,4,16,32]
[--workspaces 1,16] [--no-search]``. Each (workspaces, clients) level starts a fresh local
service, seeds searchable records, then runs C official MCP SDK clients (each its own
session over HTTP) for S seconds (default 15) doing captures, then again doing searches.
With W workspaces, client c works in workspace c mod W (W = 1: every client contends for
the one journal head; W = 16: at most ceil(C / 16) clients per head). Counts successes,
errors by contract code (any non-ok envelope) or protocol failure, and each call's
latency (p95 of the calls that succeeded). The clients share this process with the
service (one GIL): the rates are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from engram_memory.domain.context import Tool
from engram_memory.local.projector_pump import drain
from harness import (
    WORKSPACE,
    Bench,
    capture_arguments,
    envelope_of,
    machine,
    percentile,
    silenced,
    table,
    value_of,
)

WRITERS = (1, 4, 16, 32)
WORKSPACE_COUNTS = (1, 16)
QUERIES = ("ingest queue retries", "release branch smoke suite", "cache eviction policy",
           "database failover drill")


@dataclass
class Tally:
    """What one level's clients saw: outcomes by code and the latency of each success."""

    counts: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)


def workspace_names(count: int) -> tuple[str, ...]:
    """The bench workspace, then ``ws-bench-1`` … for more than one."""
    return (WORKSPACE, *tuple(f"{WORKSPACE}-{n}" for n in range(1, count)))


async def client_loop(bench: Bench, kind: str, until: float, tally: Tally, worker: int,
                      workspace: str) -> None:
    """One client: call the tool until the deadline, tallying ok and each error code."""
    bearer = [bench.token(workspace=workspace)]
    n = 0
    async with bench.client(bearer) as client:
        while time.monotonic() < until:
            n += 1
            bearer[0] = bench.token(workspace=workspace)
            if kind == "capture":
                name, args = Tool.CAPTURE.mcp_name, capture_arguments(
                    f"Worker {worker} note {n} on {QUERIES[n % len(QUERIES)]}",
                    key=f"tp-{worker}-{n}-{time.time_ns()}")
            else:
                name, args = Tool.SEARCH.mcp_name, {"query": QUERIES[n % len(QUERIES)],
                                                    "purpose_ref": "purpose:bench"}
            started = time.perf_counter()
            try:
                envelope = envelope_of(await client.call_tool(name, args))
                ok = bool(envelope["ok"])
                tally.counts["ok" if ok else envelope["error"]["code"]] += 1
                if ok:
                    tally.latencies_ms.append((time.perf_counter() - started) * 1000)
            except Exception:  # a protocol failure counts as an error, the run goes on
                tally.counts["protocol failure"] += 1


class JournalCommits:
    """Counts the commits sent on a journal head (TransactWriteItems naming a ``HEAD``)."""

    EVENT = "before-parameter-build.dynamodb.TransactWriteItems"

    def __init__(self) -> None:
        from engram_memory import bootstrap  # the service's wired client, in this process

        self.sent = 0
        self._events = bootstrap.dynamodb_client().meta.events
        self._events.register(self.EVENT, self._count, unique_id="throughput-commits")

    def _count(self, params: dict[str, Any], **_: Any) -> None:
        if any(element.get("Update", {}).get("Key", {}).get("sk", {}).get("S") == "HEAD"
               for element in params.get("TransactItems", [])):
            self.sent += 1

    def close(self) -> None:
        """Stop counting."""
        self._events.unregister(self.EVENT, unique_id="throughput-commits")


async def run_level(bench: Bench, kind: str, clients: int, seconds: float,
                    workspaces: tuple[str, ...]) -> dict[str, Any]:
    """C clients for ``seconds``: calls/s, successes, p95 ms, the errors by code and the
    journal commits sent per success."""
    tally = Tally()
    commits = JournalCommits()
    start = time.monotonic()
    until = start + seconds
    try:
        await asyncio.gather(*(client_loop(bench, kind, until, tally, w,
                                           workspaces[w % len(workspaces)])
                               for w in range(clients)))
    finally:
        commits.close()
    elapsed = time.monotonic() - start
    ok = tally.counts.pop("ok", 0)
    p95 = percentile(tally.latencies_ms, 95) if tally.latencies_ms else float("nan")
    return {"per_s": ok / elapsed, "ok": ok, "p95": p95, "errors": errors_cell(tally.counts),
            "fence_lost": tally.counts.get("FENCE_LOST", 0),
            "commits_per_ok": commits.sent / ok if ok else float("nan")}


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


def saturation(rows: list[dict[str, Any]]) -> str:
    """Where accepted captures/s stop growing, per workspace count."""
    lines = []
    for count in sorted({r["workspaces"] for r in rows}):
        mine = [r for r in rows if r["workspaces"] == count]
        best = max(mine, key=lambda r: r["captures"]["per_s"])
        shed = [r["clients"] for r in mine if r["captures"]["fence_lost"]]
        lines.append(
            f"{count} workspace(s): peak {best['captures']['per_s']:.2f} captures/s at "
            f"{best['clients']} clients; first agent-visible FENCE_LOST at "
            f"{min(shed) if shed else 'none of the levels'} clients")
    return "\n".join(lines)


def main() -> None:
    """Measure every level and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (1 s per level)")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--writers", default=",".join(map(str, WRITERS)))
    parser.add_argument("--workspaces", default=",".join(map(str, WORKSPACE_COUNTS)))
    parser.add_argument("--no-search", action="store_true", help="captures only")
    options = parser.parse_args()
    seconds = 1.0 if options.quick else options.seconds
    writers = [int(w) for w in options.writers.split(",")]
    counts = [int(w) for w in options.workspaces.split(",")]
    if options.quick:
        writers, counts = [1, 4], [1, 4]
    rows: list[dict[str, Any]] = []
    for count in counts:
        names = workspace_names(count)
        for clients in writers:
            with silenced():
                bench = Bench(workspaces=names)
                try:
                    seed(bench, 3 if options.quick else 50)
                    captures = asyncio.run(run_level(bench, "capture", clients, seconds, names))
                    searches = None if options.no_search else asyncio.run(
                        run_level(bench, "search", clients, seconds, names))
                finally:
                    bench.close()
            rows.append({"workspaces": count, "clients": clients, "captures": captures,
                         "searches": searches})
    print(f"throughput over MCP: {seconds:g} s per level and tool, a fresh service per "
          f"level; {machine()}")
    print(table(
        ["workspaces", "clients", "captures/s", "captures ok", "capture p95 ms",
         "capture errors", "commits sent per capture", "searches/s", "searches ok",
         "search p95 ms", "search errors"],
        [[r["workspaces"], r["clients"], r["captures"]["per_s"], r["captures"]["ok"],
          r["captures"]["p95"], r["captures"]["errors"], r["captures"]["commits_per_ok"],
          *((r["searches"]["per_s"], r["searches"]["ok"], r["searches"]["p95"],
             r["searches"]["errors"]) if r["searches"] else ("-", "-", "-", "-"))]
         for r in rows]))
    print(saturation(rows))


if __name__ == "__main__":
    main()
