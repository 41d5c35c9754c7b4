"""Search latency, DynamoDB calls, round trips and postings read per search at 1k/10k/50k.

Run: ``.venv/bin/python bench/search_scale.py [--sizes 1000,10000,50000] [--rounds 3] [--k
1000] [--aws-delay-ms 5] [--completion-caps 0,200] [--replay]`` (``--k``: postings read per
query term, ENGRAM_SEARCH_POSTINGS_PER_TERM; ``--aws-delay-ms``: a fixed delay slept in
every AWS call's ``before-call``, the network round trip moto does not have;
``--completion-caps``: each size is measured once per score-completion cap, on the same
data, 0 = no completion, default the deployed cap only; ``--replay``: also the handler's CPU
in a fresh interpreter without moto, every call answered from a recording of moto's answers,
bench/handler_replay.py).

Design costs apart from the stand-in's (issue 25 item 1), per size: p50/p95/p99 of the
search handler; sequential round trips of each timed search (bench/aws_calls.py, with the
delay); DynamoDB read units per search **computed from the item sizes** the calls
returned (moto's ``ConsumedCapacity`` is not DynamoDB's): per ``GetItem``/``BatchGetItem``
item its size rounded up to 4 KB, per ``Query`` the sum of its items' whole sizes
(a projected item plus its partition key) rounded up to 4 KB, halved when eventually
consistent; the handler's own CPU time = the process's CPU
time during the call minus the CPU moto spent answering its requests (each call's thread
CPU from ``request-created`` to the bench's ``before-send`` hook, which runs after moto's
built-in one has produced the response) and minus the CPU of the bench's own
``after-call`` hooks (pricing the items, counting the postings: before 2026-12-06 that was
counted as the handler's, and it grows with the items read); and, beside it, the vector
query the semantic channel would make: an exact cosine top-k over as many 384-dimension
vectors as records
(``adapters/vectors/exact_top_k``, the local index's search; in AWS it is S3 Vectors'
``QueryVectors``, one round trip not measured here).

After each size is loaded, the objects alive (moto's tables: the stand-in's data, millions of
objects at 50k records) are frozen out of Python's garbage collector (``gc.freeze``): a
Lambda's heap never holds its table, and a full collection walking moto's data inside a
search was charged to the handler, growing with size (``--collect-stand-in`` measures it so,
as runs before 2026-12-07 did).

Records are synthetic (a Zipf-distributed pseudo-word vocabulary, fixed seed) and loaded
in bulk: record items through the write path's own item mapping (``items.put_record``),
the journal head set to the last cursor, and the projection through
``DynamoProjectionStore.bulk_load`` (the same item layout the projector writes). Sizes
grow incrementally in one mocked account. Each search goes through the real search Lambda
handler (validation, ranking, revalidation, budgets, receipts); DynamoDB calls are counted
with a botocore ``before-call`` hook on the handler's client, postings read as
the postings in the blocks its ``Query`` calls returned (``after-call``), sequential round
trips with bench/aws_calls.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from itertools import accumulate
from pathlib import Path
from typing import Any, cast

BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
    "ENGRAM_TENANT_ID": "bench", "ENGRAM_WORKSPACE_IDS": "main",
    "ENGRAM_TABLE_NAME": "bench-main", "ENGRAM_KEY_TABLE_NAME": "bench-keys",
    "ENGRAM_PROJECTION_TABLE_NAME": "bench-projection", "ENGRAM_LEDGER_TABLE_NAME": "bench-ledger",
    "ENGRAM_PAGE_CURSOR_SECRET": "bench-secret",
}
PURPOSE = "purpose:bench"
VOCABULARY = 8000
VALID_T = 1_767_225_600_000
# Queries by vocabulary rank (0 = most frequent word): rare, mid and common words, alone
# and combined, so the cost can be seen to follow the postings of the query terms.
QUERY_RANKS = [
    (7000,), (3000,), (800,), (200,), (40,), (5,),
    (1500, 6000), (300, 2500), (60, 900, 4000), (10, 100, 1000, 5000), (2, 3), (4000, 7500),
]


def vocabulary(rng: random.Random) -> list[str]:
    """Distinct pronounceable pseudo-words (consonant-vowel syllables; none is a stopword)."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    """Deterministic synthetic records."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.rng.shuffle(self.words)
        self.cumulative = list(accumulate(1.0 / (rank + 1) for rank in range(VOCABULARY)))

    def text(self, n: int) -> str:
        """``n`` Zipf-distributed words."""
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))

    def payload(self, i: int) -> dict[str, Any]:
        """An effective payload (resolved retention) for record number ``i``."""
        cite = {"citation_id": "c1", "source_ref": f"repo:svc{i % 40}",
                "locator": {"scheme": "path", "value": f"docs/{self.words[i % 500]}.md"},
                "content_digest": "sha256:" + f"{i:064x}"}
        components = [
            {"component_id": "d", "kind": "decision", "text": self.text(6), "citation_ids": ["c1"]},
            {"component_id": "x", "kind": "context", "text": self.text(10),
             "citation_ids": ["c1"]},
            {"component_id": "e", "kind": "evidence", "text": self.text(4), "citation_ids": ["c1"]},
        ]
        return {"schema_version": 2, "purpose_ref": PURPOSE, "valid_time": {"t": VALID_T},
                "components": components, "primary_component_id": "d",
                "primary_event": {"at": VALID_T, "type_ref": "event:bench", "citation_id": "c1"},
                "citations": [cite], "retention": {"derivative_rule": "make-ineligible"}}


class BulkWriter:
    """Loading shim: BatchWriteItem straight into moto's backend, anything else via the client.

    Sending ~1.5 M items through botocore's serializer and moto's request parser would take
    most of the time budget and measure nothing we care about; the items are the ones our
    code builds, and every search-time call still goes through the real client. The
    backend is moto's in this process or the local service's moto process
    (``moto_backends``).
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """Put (or delete: a block a load split away) every request's item."""
        from engram_memory.local import moto_backends

        moto_backends.current().write_items(self._client.meta.region_name, RequestItems)
        return {"UnprocessedItems": {}}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def load(corpus: Corpus, start: int, stop: int, dynamodb: Any, workspace: str = "main") -> None:
    """Records ``start..stop-1`` into the main table and the projection, in bulk."""
    from engram_memory import bootstrap
    from engram_memory.adapters.dynamodb import items
    from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
    from engram_memory.domain.context import Scope
    from engram_memory.domain.ranking import analyze
    from engram_memory.domain.records import build_record, payload_digest, record_digest_for
    from engram_memory.domain.search_fields import record_document
    from engram_memory.services.ports.write import PutRecord

    settings = bootstrap.settings()
    scope = Scope(settings.tenant_id, workspace)
    writer = BulkWriter(dynamodb)
    projection = DynamoProjectionStore(writer, settings.projection_table_name)
    # One bulk_load per size step: the df counters then get one ADD per term per step.
    analyzed = []
    for batch_start in range(start, stop, 1000):
        puts: list[dict[str, Any]] = []
        for i in range(batch_start, min(stop, batch_start + 1000)):
            effective = corpus.payload(i)
            record = build_record(record_digest_for(scope, effective), effective,
                                  trust_class="asserted", recorded_at_ms=VALID_T)
            change = PutRecord(record=record, payload_digest=payload_digest(effective),
                               valid_t=VALID_T, valid_t_end=None, expires_at_ms=None,
                               cursor=i + 1, trust_binding={"trust_class": "asserted"})
            for _, element in items.put_record(change, scope, settings.table_name, VALID_T):
                puts.append({"PutRequest": {"Item": element["Put"]["Item"]}})
            analyzed.append((analyze(record_document(record.record_id, record.view)),
                             record.record_digest))
        writer.batch_write_item(RequestItems={settings.table_name: puts})
    projection.bulk_load(scope, analyzed, watermark=stop)
    dynamodb.put_item(TableName=settings.table_name, Item={
        "pk": {"S": items.journal_pk(scope)}, "sk": {"S": items.HEAD_SK},
        "cursor": {"N": str(stop)}, "event_digest": {"S": "sha256:" + "0" * 64},
    })


def previous_read_pattern() -> None:
    """Sequential per-term Queries, up to 64 terms, no budget (the release before)."""
    from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
    from engram_memory.domain import tokenizer

    def sequential(self: Any, scope: Any, terms: Any, limit: int) -> dict[str, Any]:
        return {term: self.postings(scope, term, limit) for term in dict.fromkeys(terms)}

    DynamoProjectionStore.postings_for_terms = sequential  # type: ignore[method-assign]
    tokenizer.MAX_QUERY_TERMS = 64
    from engram_memory.composition import search as search_root

    service = search_root.service()
    service._config = dataclasses.replace(service._config, postings_budget=10**9)


def item_size(item: dict[str, Any] | None) -> int:
    """DynamoDB's item size: every attribute name plus its value (0: no item)."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one typed attribute value, as DynamoDB sizes it (numbers: one byte per two
    significant digits, plus one)."""
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "B":
        return len(inner)
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in inner)
    if kind == "M":
        return 3 + item_size(inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    return 1  # BOOL, NULL


class CostMeter:
    """Read units and moto's CPU per call of the search handler's DynamoDB client."""

    def __init__(self, client: Any) -> None:
        """Hook the client; every thread's calls count (one search runs at a time)."""
        self.read_units = 0.0
        self.moto_cpu_s = 0.0
        self.hooks_cpu_s = 0.0
        self._local = threading.local()
        self._lock = threading.Lock()
        events = client.meta.events
        events.register("before-parameter-build.dynamodb.*", self._params)
        events.register("request-created.dynamodb.*", self._sent)
        # Generic, not "before-send.dynamodb.*": botocore runs more specific handlers
        # first, and this one must run after moto's built-in "before-send" stubber.
        events.register("before-send", self._answered)
        events.register("after-call.dynamodb.*", self._read)

    def _params(self, params: dict[str, Any], **_: Any) -> None:
        # A Query is charged for whole items: its projected items lack the partition key.
        key = params.get("ExpressionAttributeValues", {}).get(":pk", {}).get("S", "")
        self._local.missing_pk = 2 + len(key.encode()) if "ProjectionExpression" in params \
            and "pk" not in params["ProjectionExpression"].split(", ") else 0
        self._local.consistent = bool(params.get("ConsistentRead")) or any(
            bool(spec.get("ConsistentRead")) for spec in params.get("RequestItems", {}).values()
            if isinstance(spec, dict))

    def _sent(self, **_: Any) -> None:
        self._local.cpu = time.thread_time()

    def _answered(self, **_: Any) -> None:
        # moto's stubber (a built-in before-send handler) ran just before this one.
        spent = time.thread_time() - getattr(self._local, "cpu", time.thread_time())
        with self._lock:
            self.moto_cpu_s += spent

    def _read(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        started = time.thread_time()
        try:
            self._price(parsed, model)
        finally:
            self.bench_cpu(time.thread_time() - started)

    def bench_cpu(self, seconds: float) -> None:
        """CPU the bench's own hooks spent in a call (not the handler's: subtracted)."""
        with self._lock:
            self.hooks_cpu_s += seconds

    def _price(self, parsed: dict[str, Any], model: Any) -> float:
        """Add the call's read units (and return them)."""
        factor = 1.0 if getattr(self._local, "consistent", False) else 0.5
        if model.name == "Query":
            missing = getattr(self._local, "missing_pk", 0)
            units = math.ceil(sum(item_size(i) + missing for i in parsed.get("Items", []))
                              / 4096)
        elif model.name == "GetItem":
            units = math.ceil(item_size(parsed["Item"]) / 4096) if "Item" in parsed else 1
        elif model.name == "BatchGetItem":
            units = sum(math.ceil(item_size(i) / 4096)
                        for items in parsed.get("Responses", {}).values() for i in items)
        else:
            return 0.0
        priced = factor * max(units, 1 if model.name != "BatchGetItem" else 0)
        with self._lock:
            self.read_units += priced
        return priced

    def take(self) -> tuple[float, float]:
        """(read units, CPU seconds of moto and of the bench's hooks) since the last take."""
        with self._lock:
            taken = (self.read_units, self.moto_cpu_s + self.hooks_cpu_s)
            self.read_units = self.moto_cpu_s = self.hooks_cpu_s = 0.0
        return taken


def vector_query_ms(records: int, rounds: int = 5) -> float:
    """Median ms of an exact cosine top-10 over ``records`` random unit vectors (384-d)."""
    import numpy as np
    from engram_memory.adapters.vectors.exact_top_k import exact_top_k

    rng = np.random.default_rng(25)
    vectors = rng.standard_normal((records, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [f"mem_{i:08d}" for i in range(records)]
    times = []
    for _ in range(rounds):
        query = rng.standard_normal(384)
        started = time.perf_counter()
        exact_top_k(cast(Any, query), keys, cast(Any, vectors), 10)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def round_trips(handler: Any, events: list[dict[str, Any]]) -> list[int]:
    """Sequential round trips of each search (50 ms of simulated network per call)."""
    from aws_calls import RoundTripRecorder, sequential_round_trips
    from engram_memory import bootstrap
    from engram_memory.local.inprocess_invoker import LocalLambdaContext

    recorder = RoundTripRecorder(network_latency_s=0.05).attach([bootstrap.dynamodb_client()])
    found = []
    try:
        for event in events:
            with recorder.measure() as made:
                handler(event, LocalLambdaContext(function_name="search"))
            found.append(sequential_round_trips(made))
    finally:
        recorder.detach()
    return found


def search_event(corpus: Corpus, ranks: tuple[int, ...]) -> dict[str, Any]:
    """The search Lambda's event for the words of these vocabulary ranks."""
    context = {"tenant_id": "bench", "workspace_id": "main", "principal": "bench",
               "agent_id": "bench", "session_id": "bench", "purpose_ref": PURPOSE,
               "audit_id": "bench", "deadline_ms": 4_102_444_800_000,
               "capabilities": ["search"]}
    query = " ".join(corpus.words[r] for r in ranks)
    return {"tool": "search", "context": context,
            "arguments": {"query": query, "purpose_ref": PURPOSE, "limit": 10}}


def replayed(corpus: Corpus, cap: int, rounds: int) -> dict[str, float]:
    """Handler CPU p50/p95 with moto out of the process (bench/handler_replay.py): the
    query set run once recording every answer, then replayed ``rounds`` times."""
    from engram_memory import bootstrap
    from engram_memory.composition import search as search_root
    from engram_memory.local.inprocess_invoker import (
        LocalLambdaContext,
        default_functions_dir,
        load_handler,
    )
    from handler_replay import Recorder

    handler = load_handler(default_functions_dir(), "search")
    assert handler is not None
    events = [search_event(corpus, ranks) for ranks in QUERY_RANKS]
    # A search sizes its block reads on the term's last read (remembered per process): the
    # replaying process starts without them, so the set is recorded cold, then warm.
    cast(Any, search_root.service()._projection)._last_reads.clear()
    with Recorder(bootstrap.dynamodb_client()) as recorder:
        for _ in range(2):
            for event in events:
                handler(event, LocalLambdaContext(function_name="search"))
    env = {**BASE_ENV, "ENGRAM_SEARCH_POSTINGS_PER_TERM":
           os.environ["ENGRAM_SEARCH_POSTINGS_PER_TERM"]}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recording.json"
        path.write_text(json.dumps({"env": env, "events": events, "cap": cap,
                                    "answers": recorder.answers}))
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("handler_replay.py")), str(path),
             str(rounds)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"replay failed: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(corpus: Corpus, rounds: int, calls: list[int], read: list[int],
            meter: CostMeter | None = None, delay_ms: float = 0.0) -> dict[str, float]:
    """Run the fixed query set ``rounds`` times through the search handler."""
    from aws_calls import AwsCallCounter
    from engram_memory import bootstrap
    from engram_memory.local.inprocess_invoker import (
        LocalLambdaContext,
        default_functions_dir,
        load_handler,
    )

    handler = load_handler(default_functions_dir(), "search")
    assert handler is not None
    latencies: list[float] = []
    per_search: list[int] = []
    postings: list[int] = []
    candidates: list[int] = []
    units: list[float] = []
    own_cpu: list[float] = []
    moto_cpu: list[float] = []
    delayed: list[int] = []
    counter = AwsCallCounter(delay_ms).attach([bootstrap.dynamodb_client()])
    if meter is not None:
        meter.take()
    try:
        for _ in range(rounds):
            for ranks in QUERY_RANKS:
                event = search_event(corpus, ranks)
                calls[0] = read[0] = 0
                cpu = time.process_time()
                started = time.perf_counter()
                with counter.measure() as made:
                    envelope = handler(event, LocalLambdaContext(function_name="search"))
                latencies.append((time.perf_counter() - started) * 1000)
                cpu = time.process_time() - cpu
                if not envelope["ok"]:
                    raise SystemExit(f"search failed: {envelope['error']['code']}")
                per_search.append(calls[0])
                postings.append(read[0])
                delayed.append(made.round_trips)
                candidates.append(envelope["output"]["value"]["rank_receipt"]["candidate_count"])
                if meter is not None:
                    read_units, others_s = meter.take()
                    units.append(read_units)
                    moto_cpu.append(others_s * 1000)
                    own_cpu.append(max(0.0, cpu - others_s) * 1000)
    finally:
        counter.detach()
    latencies.sort()
    trips = round_trips(handler, [search_event(corpus, ranks) for ranks in QUERY_RANKS])
    own_cpu.sort()
    return {
        "trips_mean": statistics.mean(trips),
        "trips_max": max(trips),
        "delayed_trips_mean": statistics.mean(delayed),
        "delayed_trips_max": max(delayed),
        "p50": statistics.median(latencies),
        "p95": latencies[max(0, round(0.95 * len(latencies)) - 1)],
        "p99": latencies[max(0, round(0.99 * len(latencies)) - 1)],
        "units_mean": statistics.mean(units) if units else 0.0,
        "units_max": max(units) if units else 0.0,
        "own_cpu_p50": statistics.median(own_cpu) if own_cpu else 0.0,
        "own_cpu_p95": own_cpu[max(0, round(0.95 * len(own_cpu)) - 1)] if own_cpu else 0.0,
        "moto_cpu_p50": statistics.median(moto_cpu) if moto_cpu else 0.0,
        "calls_mean": statistics.mean(per_search),
        "calls_max": max(per_search),
        "candidates_mean": statistics.mean(candidates),
        "postings_mean": statistics.mean(postings),
        "postings_max": max(postings),
        "searches": len(latencies),
    }


def main() -> None:
    """Load each size, measure, print one line per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, default=0, help="postings per term (0: default)")
    parser.add_argument("--before", action="store_true",
                        help="the previous read pattern: sequential Queries, no budget")
    parser.add_argument("--aws-delay-ms", type=float, default=0.0,
                        help="fixed delay added to every AWS call (e.g. 5)")
    parser.add_argument("--collect-stand-in", action="store_true",
                        help="leave moto's loaded tables to the garbage collector (before "
                             "2026-12-07: full collections walked them inside searches)")
    parser.add_argument("--replay", action="store_true",
                        help="also the handler's CPU replayed without moto in its process "
                             "(bench/handler_replay.py)")
    parser.add_argument("--completion-caps", default="",
                        help="measure each size once per completion cap, e.g. 0,200 "
                             "(default: the deployed cap)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    os.environ.update(BASE_ENV)
    os.environ["ENGRAM_SEARCH_POSTINGS_PER_TERM"] = str(args.k)

    import boto3
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    prepare_moto_dynamodb()
    with mock_aws():
        from engram_memory import bootstrap
        from engram_memory.adapters.dynamodb.posting_writer import block_bytes
        from engram_memory.composition import search as search_root
        from engram_memory.domain.posting_blocks import decode
        from engram_memory.local.provisioning import create_tables

        bootstrap.reset()
        # The search handler's own client (bootstrap caches it): count every call it makes.
        dynamodb = bootstrap.dynamodb_client()
        calls, read = [0], [0]
        dynamodb.meta.events.register(
            "before-call.dynamodb", lambda **_: calls.__setitem__(0, calls[0] + 1))
        meter = CostMeter(dynamodb)

        def count_postings(parsed: dict[str, Any], **_: Any) -> None:
            # Postings read = postings in the blocks the postings Queries returned (the
            # only Query search makes); the decoding is the bench's CPU, not the handler's.
            started = time.thread_time()
            read[0] += sum(len(decode(block_bytes(i))) for i in parsed.get("Items", []))
            meter.bench_cpu(time.thread_time() - started)

        dynamodb.meta.events.register("after-call.dynamodb.Query", count_postings)
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), bootstrap.settings())
        corpus = Corpus()
        if args.before:
            previous_read_pattern()
        service = search_root.service()
        config = service._config
        caps = ([int(c) for c in args.completion_caps.split(",")] if args.completion_caps
                else [config.completion_cap])
        print(f"postings per term K = {config.postings_per_term}, per-search budget = "
              f"{config.postings_budget}{' (before: sequential reads)' if args.before else ''}"
              f"; {args.aws_delay_ms:g} ms added per AWS call", flush=True)
        rows = []
        loaded = 0
        for size in sizes:
            started = time.perf_counter()
            load(corpus, loaded, size, dynamodb)
            load_s = time.perf_counter() - started
            if not args.collect_stand_in:
                # moto's tables (millions of objects at 50k records) are the stand-in's heap,
                # not the handler's: out of the collector's way, as DynamoDB's data is out of
                # a Lambda's. Objects the searches make are collected as usual.
                gc.collect()
                gc.freeze()
            loaded = size
            vector_ms = vector_query_ms(size)  # the same for every cap: measured once
            for cap in caps:
                service._completion._config = dataclasses.replace(config, completion_cap=cap)
                r = measure(corpus, args.rounds, calls, read, meter, args.aws_delay_ms)
                replay = replayed(corpus, cap, args.rounds) if args.replay else None
                rows.append(row(size, load_s, cap, r, vector_ms, replay))
            print(f"... {size} records measured", flush=True)
        headers = ["records", "load s", "completion cap", "searches", "p50 ms", "p95 ms",
                   "p99 ms", "handler CPU p50 ms", "handler CPU p95 ms", "moto + hooks CPU p50 ms",
                   "round trips (delay)", "round trips (50 ms)", "DynamoDB calls",
                   "read units (computed)", "postings read", "candidates",
                   "vector query ms", "replayed handler CPU p50 / p95 ms"]
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for line in rows:
            print("| " + " | ".join(line) + " |")


def row(size: int, load_s: float, cap: int, r: dict[str, float],
        vector_ms: float, replay: dict[str, float] | None = None) -> list[str]:
    """One table row of a size measured under one completion cap."""
    return [f"{size}", f"{load_s:.0f}", f"{cap}", f"{r['searches']:.0f}",
            f"{r['p50']:.1f}", f"{r['p95']:.1f}", f"{r['p99']:.1f}",
            f"{r['own_cpu_p50']:.1f}", f"{r['own_cpu_p95']:.1f}", f"{r['moto_cpu_p50']:.1f}",
            f"{r['delayed_trips_mean']:.1f} (max {r['delayed_trips_max']:.0f})",
            f"{r['trips_mean']:.1f} (max {r['trips_max']:.0f})",
            f"{r['calls_mean']:.1f} (max {r['calls_max']:.0f})",
            f"{r['units_mean']:.1f} (max {r['units_max']:.1f})",
            f"{r['postings_mean']:.0f} (max {r['postings_max']:.0f})",
            f"{r['candidates_mean']:.0f}", f"{vector_ms:.1f}",
            f"{replay['p50']:.1f} / {replay['p95']:.1f}" if replay else "–"]


if __name__ == "__main__":
    main()
