"""Ranking quality on Cranfield per channel, the semantic channel's costs, cold imports.

Run: ``.venv/bin/python bench/ranking_quality.py [--quick | --docs N] [--data DIR]`` (all
1,400 documents by default: ~20 minutes on moto here; ``--quick`` = 20, and the cold
import of the two functions the semantic channel adds to: search and projector). Every Cranfield
document is captured and admitted into the local service (title → the primary decision
component, abstract → a context component; the tool handlers are called in-process), the
projector drains (it embeds every record with the committed ONNX model), and every query
runs through ``engram_memory_search`` over MCP (official SDK client; two pages of 50 for
the top 100) three times: ``lexical`` (BM25F), ``semantic alone`` (the deployment's
fusion with lexical weight 0) and ``hybrid`` (``lexical_and_semantic``: the deployed
fusion of both).
nDCG@10 with linear and exponential gains, Recall@10 and Recall@100 (bench/ir_eval.py)
are printed, in the same run, beside three reference rankers (bench/reference_rankers.py):
``bm25s`` with English stopwords + the same Snowball stemmer, ``bm25s`` plain, and the
previous release's BM25F (tokenizer 1, k1 1.2) scored directly without the service, all
on the identical title + abstract text. Then: the query
latency the semantic channel adds (first page over MCP, and the query embedding alone);
its cold start (model hash check + load + first embedding in a fresh interpreter) and the
Lambda layer's size with and without it (when ``python infra/package.py`` has built
``build/lambda``); per handler module, the cold import time (``python -X importtime``,
median of 3) and the child's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engram_memory import bootstrap
from engram_memory.composition import search as search_root
from engram_memory.domain.context import Tool
from engram_memory.local.projector_pump import drain
from harness import (
    ROOT,
    Bench,
    capture_arguments,
    envelope_of,
    machine,
    percentile,
    silenced,
    table,
    value_of,
)
from ir_eval import (
    Collection,
    load_cranfield,
    mean,
    ndcg_at,
    ndcg_linear_at,
    primary_text,
    recall_at,
    titles,
)
from reference_data import reference_data
from reference_rankers import bm25s_plain, bm25s_stemmed, previous_release
from semantic_costs import channel_costs

DEFAULT_DATA = reference_data() / "cranfield"
TITLES: dict[str, str] = {}
HANDLERS = ("search", "get", "capture", "request_admission", "withdraw", "forget",
            "mcp_endpoint", "projector")
QUICK_HANDLERS = ("search", "projector")


def load(folder: Path, limit: int | None) -> Collection:
    """The collection, or its first ``limit`` documents and the queries judged on them."""
    collection = load_cranfield(folder)
    TITLES.update(titles(folder))
    if limit is None or limit >= len(collection.docs):
        return collection
    docs = dict(list(collection.docs.items())[:limit])
    qrels = {q: {d: g for d, g in rel.items() if d in docs} for q, rel in collection.qrels.items()}
    qrels = {q: rel for q, rel in qrels.items() if rel}
    queries = {q: t for q, t in collection.queries.items() if q in qrels}
    return Collection(docs, queries, qrels)


def capture_of(doc_id: str, text: str) -> dict[str, Any]:
    """Capture arguments of one document: title → primary decision, abstract → context.

    The title is sent as it is (the abstract's first 200 characters when it has none): an
    empty document stays empty, so the service refuses it as the contract says.
    """
    title = primary_text(TITLES.get(doc_id, ""), text)
    arguments = capture_arguments(title, text, key=f"cranfield-doc-{doc_id:0>6}-capture")
    arguments["payload"]["components"][0]["text"] = title
    return arguments


def ingest(bench: Bench, collection: Collection
           ) -> tuple[dict[str, str], dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Capture + admit every document: record id → doc id, the payloads the service
    accepted (doc id → payload), and the refused doc ids per error code."""
    by_record: dict[str, str] = {}
    payloads: dict[str, dict[str, Any]] = {}
    refused: dict[str, list[str]] = {}
    # Index once at the end: one drain is cheaper than a projector competing with the
    # ingest for the serialized stand-in, and the ranking does not depend on when it ran.
    bench.pause_pumps()
    for doc_id, text in collection.docs.items():
        arguments = capture_of(doc_id, text)
        outcome = bench.direct(Tool.CAPTURE, arguments)
        if outcome["ok"]:
            outcome = bench.direct(Tool.REQUEST_ADMISSION, {
                "candidate_id": outcome["output"]["value"]["candidate_id"],
                "idempotency_key": f"cranfield-doc-{doc_id:0>6}-admit"})
        if not outcome["ok"]:
            refused.setdefault(outcome["error"]["code"], []).append(doc_id)
            continue
        by_record[value_of(outcome)["outcome"]["record_id"]] = doc_id
        payloads[doc_id] = arguments["payload"]
    drain(bench.service.settings)
    return by_record, payloads, refused


LEXICAL = {"minimum_channels": "lexical", "network": "forbid"}
BOTH = {"minimum_channels": "lexical_and_semantic", "network": "forbid"}
# (row name, capability policy, deployment settings for the run)
MODES: tuple[tuple[str, dict[str, str], dict[str, str]], ...] = (
    ("lexical: BM25F tokenizer 2 (over MCP)", LEXICAL, {}),
    ("semantic alone: all-MiniLM-L6-v2 int8", BOTH,
     {"ENGRAM_SEARCH_FUSION_LEXICAL_WEIGHT": "0"}),
    ("hybrid: lexical_and_semantic (deployed fusion)", BOTH, {}),
)


def configure(settings: dict[str, str]) -> None:
    """Set the deployment settings of one run and re-wire the search function."""
    os.environ.pop("ENGRAM_SEARCH_FUSION_LEXICAL_WEIGHT", None)
    os.environ.update(settings)
    bootstrap.settings.cache_clear()
    search_root.service.cache_clear()


async def our_rankings(bench: Bench, queries: dict[str, str], by_record: dict[str, str],
                       policy: dict[str, str]) -> tuple[dict[str, list[str]], int, list[float]]:
    """Top 100 doc ids per query through engram_memory_search over MCP; errors; the
    first page's latency (ms) of each query."""
    rankings: dict[str, list[str]] = {}
    errors = 0
    latencies: list[float] = []
    bearer = [bench.token()]
    async with bench.client(bearer) as client:
        for qid, text in queries.items():
            ranked: list[str] = []
            args: dict[str, Any] = {"query": text, "purpose_ref": "purpose:bench", "limit": 50,
                                    "capability_policy": policy}
            while len(ranked) < 100:
                bearer[0] = bench.token()
                started = time.perf_counter()
                envelope = envelope_of(await client.call_tool(Tool.SEARCH.mcp_name, args))
                if not ranked:
                    latencies.append((time.perf_counter() - started) * 1000)
                if not envelope["ok"]:
                    errors += 1
                    break
                value = envelope["output"]["value"]
                ranked += [by_record.get(p["record"]["record_id"], "?") for p in value["records"]]
                if not value.get("next_page_cursor"):
                    break
                args = {**args, "page_cursor": value["next_page_cursor"]}
            rankings[qid] = ranked[:100]
    return rankings, errors, latencies


def scores(rankings: dict[str, list[str]], collection: Collection) -> list[str]:
    """nDCG@10 (linear, exponential gains), Recall@10, Recall@100: means over judged queries."""
    judged = [q for q in collection.queries if collection.qrels.get(q)]

    def avg(measure: Any, k: int) -> str:
        return f"{mean([measure(rankings.get(q, []), collection.qrels[q], k) for q in judged]):.4f}"

    return [avg(ndcg_linear_at, 10), avg(ndcg_at, 10), avg(recall_at, 10), avg(recall_at, 100)]


def cold_import(module: str, runs: int = 3) -> tuple[float, float, float]:
    """(median import ms from -X importtime, median process wall ms, max peak RSS MiB)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'shared'}"}
    # VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss survives exec and would report
    # this (large) parent's RSS at fork time; VmHWM belongs to the new address space.
    code = ("import " + module + "; from pathlib import Path; "
            "print([l.split()[1] for l in Path('/proc/self/status').read_text().splitlines()"
            " if l.startswith('VmHWM')][0])")
    imports, walls, rss = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT,
                              env=env, capture_output=True, text=True, check=True)
        walls.append((time.perf_counter() - start) * 1000)
        rss.append(int(done.stdout.strip().splitlines()[-1]) / 1024)
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
            if len(parts) == 3 and parts[2] == module:
                imports.append(int(parts[1]) / 1000)
    return statistics.median(imports), statistics.median(walls), max(rss)


def quality_table(runs: dict[str, dict[str, list[str]]], collection: Collection) -> str:
    """One row per ranker."""
    return table(["ranker", "nDCG@10 lin", "nDCG@10 exp", "Recall@10", "Recall@100"],
                 [[name, *scores(rankings, collection)] for name, rankings in runs.items()])


def latency_rows(latencies: dict[str, list[float]]) -> list[list[str]]:
    """Median and p95 of the first page per mode, and the difference to lexical."""
    base = statistics.median(latencies[MODES[0][0]])
    return [[name, f"{statistics.median(v):.1f}", f"{percentile(v, 95):.1f}",
             f"{statistics.median(v) - base:+.1f}"] for name, v in latencies.items()]


def progress(line: str) -> None:
    """A timestamped line on stderr (not silenced): a long run that is stopped early still
    leaves the numbers of every stage it finished."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def run_modes(bench: Bench, collection: Collection, by_record: dict[str, str]
              ) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[float]], int]:
    """Every query through the service once per mode."""
    runs: dict[str, dict[str, list[str]]] = {}
    latencies: dict[str, list[float]] = {}
    errors = 0
    for name, policy, settings in MODES:
        configure(settings)
        runs[name], failed, latencies[name] = asyncio.run(
            our_rankings(bench, collection.queries, by_record, policy))
        errors += failed
        progress(f"{name}: nDCG@10 lin, exp, Recall@10, Recall@100 = "
                 f"{', '.join(scores(runs[name], collection))}; {failed} search errors")
    configure({})
    return runs, latencies, errors


def reference_runs(collection: Collection, payloads: dict[str, dict[str, Any]]
                   ) -> dict[str, dict[str, list[str]]]:
    """bm25s on the text the service accepted, and the previous release over its payloads."""
    texts = {d: f"{TITLES.get(d, '')} {collection.docs[d]}" for d in payloads}
    return {
        "bm25s BM25 + stopwords + Snowball stems (same text)":
            bm25s_stemmed(texts, collection.queries),
        "bm25s BM25 plain (same text)": bm25s_plain(texts, collection.queries),
        "previous release: BM25F tokenizer 1, k1 1.2 (direct, no MCP)":
            previous_release(payloads, collection.queries),
    }


def refusal_text(refused: dict[str, list[str]]) -> str:
    """How many captures or admissions were refused, by contract code and document."""
    count = sum(len(ids) for ids in refused.values())
    detail = "; ".join(f"{code}: docs {', '.join(ids)}" for code, ids in sorted(refused.items()))
    return f"{count} refused at capture" + (f" ({detail})" if detail else "")


def print_quality(collection: Collection, runs: dict[str, dict[str, list[str]]],
                  refused: dict[str, list[str]], ingest_s: float, errors: int) -> None:
    """The header line, the quality table and hybrid's margin over lexical."""
    print(f"Cranfield: {len(collection.docs)} documents ({refusal_text(refused)}, "
          f"ingest {ingest_s:.0f} s with embedding), {len(collection.queries)} queries, "
          f"{errors} search errors; {machine()}")
    print(quality_table(runs, collection))
    lexical, hybrid = (float(scores(runs[MODES[i][0]], collection)[0]) for i in (0, 2))
    print(f"\nhybrid - lexical, nDCG@10 (linear gains), same run: {hybrid - lexical:+.4f}")


def main() -> None:
    """Ingest, rank per mode, score, measure the channel's costs and the cold imports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="20 documents; one cold import of search and projector")
    parser.add_argument("--docs", type=int, default=None,
                        help="only the first N documents (default: all 1,400)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    options = parser.parse_args()
    collection = load(options.data, 20 if options.quick else options.docs)
    with silenced():
        bench = Bench()
        try:
            started = time.perf_counter()
            by_record, payloads, refused = ingest(bench, collection)
            ingest_s = time.perf_counter() - started
            progress(f"ingest {ingest_s:.0f} s, {refusal_text(refused)}")
            runs, latencies, errors = run_modes(bench, collection, by_record)
        finally:
            bench.close()
    runs.update(reference_runs(collection, payloads))
    print_quality(collection, runs, refused, ingest_s, errors)
    print("\nfirst page (limit 50) over MCP, ms")
    print(table(["mode", "median", "p95", "median vs lexical"], latency_rows(latencies)))
    runs_n = 1 if options.quick else 3
    print(channel_costs(ROOT, [collection.queries[q] for q in list(collection.queries)[:50]],
                        runs_n))
    rows = [[f"functions.{name}.handler", *cold_import(f"functions.{name}.handler", runs_n)]
            for name in (QUICK_HANDLERS if options.quick else HANDLERS)]
    print(f"\ncold import of each handler module (fresh interpreter, median of {runs_n}; "
          "peak RSS = VmHWM of the child)")
    print(table(["module", "import ms (-X importtime)", "process wall ms", "peak RSS MiB"],
                rows))


if __name__ == "__main__":
    main()
