"""Long queries on the local service: their cost beside a 3-term query, and their effect on
another workspace's calls.

Run: ``.venv/bin/python bench/search_isolation.py [--records 3000] [--rounds 5] [--before]``.
The local service (moto server over HTTP, projector pump) gets ``--records`` synthetic
records in its workspace (bench/search_scale.py's Zipf corpus and bulk loader) and one
captured + admitted record in a second workspace. Then, through the service's tool invoker
(as its MCP endpoint calls the handlers: in ``--handler-processes`` worker processes, 2 as
``serve``'s default; 0 runs them in this process, as before ``local/process_invoker.py``):

* a 3-term and a 64-term query of the corpus' most frequent words, ``--rounds`` times
  each: p50/p95 ms, DynamoDB calls, and sequential round trips (bench/aws_calls.py,
  measured in a separate pass with 50 ms of simulated network per call, so that calls in
  flight together overlap as they do on AWS instead of queueing on the GIL);
* the other workspace's ``get``: p50/p95 alone, then while one 64-term search after
  another runs in a background thread.

``--before`` reproduces the previous read pattern on the same data: one Query per term,
one after another, up to 64 terms, no per-search postings budget. ``--moto-in-process``
runs moto's server in the service's own process, as the local service did before
``local/moto_process.py`` (one GIL for moto and the handlers). Both run the handlers in this
process (they patch its code).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from aws_calls import RoundTripRecorder, sequential_round_trips
from engram_memory.domain.context import Tool
from harness import WORKSPACE, Bench, capture_arguments, machine, percentile, silenced, table
from search_scale import Corpus, load, previous_read_pattern

OTHER = "ws-other"


def timed(call: Any, rounds: int, name: str) -> list[float]:
    """Wall milliseconds of ``rounds`` calls (each must succeed; ``name`` says which failed)."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        envelope = call()
        times.append((time.perf_counter() - started) * 1000)
        if not envelope["ok"]:
            raise SystemExit(f"{name} failed: {envelope['error']['code']}")
    return times


def searcher(bench: Bench, query: str) -> Any:
    """A search of ``query`` in the loaded workspace, as the endpoint calls the handler."""
    return lambda: bench.invoke(Tool.SEARCH, {"query": query, "purpose_ref": "purpose:bench",
                                              "limit": 10})


def query_row(bench: Bench, name: str, query: str, rounds: int) -> list[Any]:
    """Terms used, p50, p95, DynamoDB calls and sequential round trips of one query."""
    from engram_memory import bootstrap
    from engram_memory.domain.tokenizer import query_terms

    times = timed(searcher(bench, query), rounds, f"search of {name}")
    arguments = {"query": query, "purpose_ref": "purpose:bench", "limit": 10}
    bench.direct(Tool.SEARCH, arguments)  # warm, as the timed calls' workers are
    recorder = RoundTripRecorder(network_latency_s=0.05).attach([bootstrap.dynamodb_client()])
    try:
        with recorder.measure() as calls:  # in this process, where the recorder listens
            bench.direct(Tool.SEARCH, arguments)
    finally:
        recorder.detach()
    return [name, len(query_terms(query)), f"{statistics.median(times):.0f}",
            f"{percentile(times, 95):.0f}", len(calls), sequential_round_trips(calls)]


def other_workspace_get(bench: Bench, record_id: str, rounds: int,
                        busy_query: str | None) -> list[float]:
    """The other workspace's get latencies, optionally beside back-to-back searches."""
    stop = threading.Event()

    def keep_searching() -> None:
        search = searcher(bench, busy_query or "")
        while not stop.is_set():
            search()

    worker = threading.Thread(target=keep_searching, daemon=True)
    if busy_query:
        worker.start()
        time.sleep(0.5)
    try:
        return timed(lambda: bench.invoke(
            Tool.GET, {"record_id": record_id, "purpose_ref": "purpose:bench"},
            workspace_id=OTHER), rounds,
            "the other workspace's get" + (" beside searches" if busy_query else " alone"))
    finally:
        stop.set()
        if busy_query:
            worker.join()


def warm(bench: Bench, record_id: str, processes: int) -> None:
    """Load the search and get handlers in every worker (a first call in a fresh process
    imports them: a cold start, which the timed calls leave out as they did in process)."""
    from concurrent.futures import ThreadPoolExecutor

    calls = [searcher(bench, "warm up"), lambda: bench.invoke(
        Tool.GET, {"record_id": record_id, "purpose_ref": "purpose:bench"},
        workspace_id=OTHER)]
    with ThreadPoolExecutor(max(processes, 1)) as callers:  # best effort: at once, so
        for call in calls:                                    # each worker likely gets one
            for _ in range(2):
                list(callers.map(lambda _, call=call: call(), range(max(processes, 1))))


def moto_in_this_process() -> None:
    """Start the local service's moto in this process (the arrangement before)."""
    from engram_memory.local import moto_backends, service
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from engram_memory.local.moto_server import MotoService, start_moto

    def start(environ: Any = None) -> MotoService:
        prepare_moto_dynamodb()
        moto_backends.use(None)
        return start_moto(environ)

    service.start_moto_process = start  # type: ignore[attr-defined]


def main() -> None:
    """Load, measure, print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", action="store_true", help="the previous read pattern")
    parser.add_argument("--moto-in-process", action="store_true",
                        help="moto's server in this process (before moto_process)")
    parser.add_argument("--handler-processes", type=int, default=2,
                        help="worker processes for the handlers, as serve's default "
                             "(0: in this process, as before process_invoker)")
    options = parser.parse_args()
    if options.moto_in_process:
        moto_in_this_process()
    if options.before or options.moto_in_process:
        options.handler_processes = 0  # both arrangements patch this process's code
    corpus = Corpus()
    short = " ".join(corpus.words[:3])
    long = " ".join(corpus.words[:64])
    with silenced():
        bench = Bench(workspaces=(WORKSPACE, OTHER),
                      handler_processes=options.handler_processes)
        try:
            from engram_memory import bootstrap

            if options.before:
                previous_read_pattern()
            other = bench.direct(Tool.CAPTURE, capture_arguments("The other workspace note."),
                                 workspace_id=OTHER)
            admitted = bench.direct(Tool.REQUEST_ADMISSION, {
                "candidate_id": other["output"]["value"]["candidate_id"],
                "idempotency_key": "isolation-admit-0001"}, workspace_id=OTHER)
            record_id = admitted["output"]["value"]["outcome"]["record_id"]
            load(corpus, 0, options.records, bootstrap.dynamodb_client(), WORKSPACE)
            bench.pause_pumps()
            warm(bench, record_id, options.handler_processes)
            rows = [query_row(bench, "3 frequent words", short, options.rounds),
                    query_row(bench, "64 frequent words", long, options.rounds)]
            alone = other_workspace_get(bench, record_id, 4 * options.rounds, None)
            busy = other_workspace_get(bench, record_id, 4 * options.rounds, long)
        finally:
            bench.close()
    mode = "before (sequential, no budget)" if options.before else "after"
    mode += "; moto in this process" if options.moto_in_process else "; moto in its own process"
    mode += (f"; handlers in {options.handler_processes} worker processes"
             if options.handler_processes else "; handlers in this process")
    print(f"{options.records} records, {mode}; {machine()}")
    print(table(["query", "terms used", "p50 ms", "p95 ms", "DynamoDB calls",
                 "sequential round trips"], rows))
    print(table(["other workspace's get", "p50 ms", "p95 ms"], [
        ["alone", f"{statistics.median(alone):.0f}", f"{percentile(alone, 95):.0f}"],
        ["beside back-to-back 64-word searches", f"{statistics.median(busy):.0f}",
         f"{percentile(busy, 95):.0f}"]]))


if __name__ == "__main__":
    main()
