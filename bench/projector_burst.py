"""The projector behind a burst of writes: what catching up costs, what a search costs meanwhile.

Run: ``.venv/bin/python bench/projector_burst.py [--pairs N]`` (default 100). A fresh local
service (moto), its pumps paused; N capture + admission pairs (2N journal events) go
through the tool handlers in process; then, with the projector still stopped, one search
for the newest record (it merges the whole journal tail: its wall time and DynamoDB calls);
then the projector drains the backlog (``local/projector_pump.drain``: the stream pump
feeding ``functions/projector/handler.py``, 100 stream records per batch), timed, with the
DynamoDB calls it made counted (``bench/aws_calls.py``). The tail bound is raised for the
search so a backlog above the shipped bound is still measured.
"""

from __future__ import annotations

import argparse
import os
import time

from aws_calls import AwsCallCounter, describe, total
from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.local.projector_pump import drain
from harness import PURPOSE, Bench, capture_arguments, machine, silenced, table


def admit(bench: Bench, n: int) -> str:
    """One capture + admission pair; the record id."""
    note = f"Burst note {n}: the kestrel{n} importer copies wiki pages into memory."
    captured = bench.direct(Tool.CAPTURE, capture_arguments(note, key=f"burst-cap-{n:06d}"))
    assert captured["ok"], captured
    admitted = bench.direct(Tool.REQUEST_ADMISSION, {
        "candidate_id": captured["output"]["value"]["candidate_id"],
        "idempotency_key": f"burst-adm-{n:06d}"})
    assert admitted["ok"], admitted
    return str(admitted["output"]["value"]["outcome"]["record_id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args()
    os.environ["ENGRAM_SEARCH_TAIL_BOUND"] = str(2 * args.pairs + 10)
    bench = Bench()
    try:
        bench.pause_pumps()
        time.sleep(0.5)
        drain(bench.service.settings)
        started = time.monotonic()
        with silenced():
            last = ""
            for n in range(args.pairs):
                last = admit(bench, n)
        writes_s = time.monotonic() - started
        counter = AwsCallCounter().attach([bootstrap.dynamodb_client()])
        with counter.measure() as search_calls:
            t0 = time.monotonic()
            with silenced():
                found = bench.direct(Tool.SEARCH, {"query": f"kestrel{args.pairs - 1}",
                                                   "purpose_ref": PURPOSE})
            search_ms = (time.monotonic() - t0) * 1000
        assert found["ok"], found
        assert found["output"]["value"]["records"][0]["record"]["record_id"] == last
        with counter.measure() as drain_calls:
            t0 = time.monotonic()
            with silenced():
                drain(bench.service.settings)
            drain_s = time.monotonic() - t0
        counter.detach()
    finally:
        bench.close()
    events = 2 * args.pairs
    print(machine())
    print(table(
        ["pairs", "events", "writes s", "search at backlog ms", "search ddb calls",
         "search round trips",
         "drain s", "events/s drained", "drain ddb calls", "calls/pair"],
        [[args.pairs, events, f"{writes_s:.1f}", f"{search_ms:.0f}", total(search_calls.calls),
          search_calls.round_trips,
          f"{drain_s:.1f}", f"{events / drain_s:.1f}", total(drain_calls.calls),
          f"{total(drain_calls.calls) / args.pairs:.1f}"]]))
    print("search:", describe(search_calls.calls))
    print("drain:", describe(drain_calls.calls))


if __name__ == "__main__":
    main()
