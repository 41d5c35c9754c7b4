"""Retrieval quality of a BEIR-layout set, ranked as the deployment ranks it.

Run: ``.venv/bin/python bench/retrieval_eval.py --beir DIR [--scope-field NAME]
[--path in-process|service] [--modes lexical semantic hybrid] [--limit N] [--json OUT]``.

``DIR`` holds ``corpus.jsonl`` (``_id``, ``title``, ``text``, any other fields),
``queries.jsonl`` (``_id``, ``text``) and ``qrels.tsv`` (header ``query-id corpus-id
score``). Every document becomes one capture, as the product stores it: ``title`` → the
primary component, ``text`` → a context component; with no title the text itself is the
primary component (one component). ``--scope-field`` puts the documents with one value of
that field into one workspace of their own, and a query (which carries the same field)
searches only its own. Only queries with judgements are scored, the first ``--limit`` of
them when given. Printed (and written by ``--json``): nDCG@10 with the qrels' gains
(linear), Recall@10 and Recall@100 per mode; ``lexical`` = the ``lexical`` search,
``semantic`` = the deployment's fusion with lexical weight 0 (the semantic channel alone),
``hybrid`` = a ``lexical_and_semantic`` search with the deployment's fusion settings.

``--path in-process`` runs the functions the projector and search Lambdas run, without
the AWS stand-ins: the capture arguments are validated and screened as capture does, the
record id is the one admission derives, the lexical index is built with the projector's
analysis (domain/ranking.build_index over domain/search_fields.record_document) and
ranked with each term's best postings within the per-search budget
(domain/impact.score_top_k), the semantic channel is services/semantic.SemanticChannel
(the deployment's embedder; records embedded 100 to a call with ``index_records``, as the
projector embeds a stream batch; the local service's exact cosine top-k), and the
channels are fused by services/channels.ChannelPlanner with the settings
the search function reads (``ENGRAM_SEARCH_FUSION*`` in this environment, else the
defaults). ``--path service`` starts the local service, captures and admits every document
(the tool handlers, in process), lets the projector index them, and runs every query
through ``engram_memory_search`` over MCP (two pages of 50).
tests/e2e/test_retrieval_eval.py checks that both give the same rankings.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _entry in (str(ROOT), str(ROOT / "shared"), str(ROOT / "bench")):
    if _entry not in sys.path:
        sys.path.insert(0, _entry)

from engram_memory import semantic_wiring  # noqa: E402
from engram_memory.adapters.vectors.exact_top_k import exact_top_k  # noqa: E402
from engram_memory.adapters.vectors.s3_vectors import record_of, vector_key  # noqa: E402
from engram_memory.composition.search import ranking_config  # noqa: E402
from engram_memory.contract.validation import (  # noqa: E402
    canonical_arguments,
    validate_arguments,
)
from engram_memory.domain import records  # noqa: E402
from engram_memory.domain.canonical import record_id_for  # noqa: E402
from engram_memory.domain.context import Scope, Tool  # noqa: E402
from engram_memory.domain.errors import EngramError  # noqa: E402
from engram_memory.domain.impact import score_top_k  # noqa: E402
from engram_memory.domain.ranking import ScoredRecord, build_index  # noqa: E402
from engram_memory.domain.search_fields import record_document  # noqa: E402
from engram_memory.domain.tokenizer import query_terms  # noqa: E402
from engram_memory.screening.secrets import capture_texts, find_secret  # noqa: E402
from engram_memory.services.channels import ChannelPlanner  # noqa: E402
from engram_memory.services.ports.semantic import Vector, VectorHit  # noqa: E402
from engram_memory.services.semantic import SemanticChannel  # noqa: E402
from engram_memory.settings import Settings  # noqa: E402
from ir_eval import mean, ndcg_linear_at, recall_at  # noqa: E402

MODES = ("lexical", "semantic", "hybrid")
TENANT = "t-bench"  # harness.TENANT: record ids (hence score ties) derive from the scope
PURPOSE = "purpose:eval"
DEPTH = 100  # Recall@100: the ranking is read to this depth
PROJECTOR_BATCH = 100  # records per projector invocation (a stream batch, a catch-up page)
# The deployment settings each mode runs with (on top of this environment's).
MODE_SETTINGS: dict[str, dict[str, str]] = {
    "lexical": {}, "semantic": {"ENGRAM_SEARCH_FUSION_LEXICAL_WEIGHT": "0"}, "hybrid": {}}
MODE_POLICY = {
    "lexical": {"minimum_channels": "lexical", "network": "forbid"},
    "semantic": {"minimum_channels": "lexical_and_semantic", "network": "forbid"},
    "hybrid": {"minimum_channels": "lexical_and_semantic", "network": "forbid"},
}
_PLACEHOLDERS = {"ENGRAM_TENANT_ID": TENANT, "ENGRAM_TABLE_NAME": "eval",
                 "ENGRAM_KEY_TABLE_NAME": "eval", "ENGRAM_PROJECTION_TABLE_NAME": "eval"}


@dataclass
class BeirSet:
    """Documents (in file order), queries and judgements of one BEIR-layout folder."""

    docs: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(folder: Path) -> BeirSet:
    """Read corpus.jsonl, queries.jsonl and qrels.tsv (header row, tab-separated)."""
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return BeirSet(_jsonl(folder / "corpus.jsonl"), _jsonl(folder / "queries.jsonl"), qrels)


def judged_queries(beir: BeirSet, limit: int | None) -> list[dict[str, Any]]:
    """The queries with at least one judgement, the first ``limit`` of them."""
    judged = [q for q in beir.queries if beir.qrels.get(str(q["_id"]))]
    return judged[:limit] if limit else judged


def workspaces(beir: BeirSet, scope_field: str | None) -> dict[str, str]:
    """Scope value → workspace id (``ws-001``, … in order of first appearance)."""
    if not scope_field:
        return {"": "ws-001"}
    names: dict[str, str] = {}
    for row in (*beir.docs, *beir.queries):
        value = str(row.get(scope_field, ""))
        names.setdefault(value, f"ws-{len(names) + 1:03d}")
    return names


def scope_value(row: Mapping[str, Any], scope_field: str | None) -> str:
    """The row's scope value ("" without a scope field)."""
    return str(row.get(scope_field, "")) if scope_field else ""


def capture_arguments(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A document as one capture: title → primary component, text → context component
    (the text alone is the primary component when there is no title)."""
    title, text = str(doc.get("title") or "").strip(), str(doc.get("text") or "")
    texts = [t for t in (title, text) if t] or [""]
    components = [{"component_id": f"c{i}", "kind": "context", "text": t,
                   "citation_ids": ["cit1"]} for i, t in enumerate(texts, start=1)]
    # One source per document: two documents with the same text stay two records.
    source = "sha256:" + hashlib.sha256(str(doc["_id"]).encode()).hexdigest()
    return {
        "idempotency_key": "eval-" + hashlib.sha256(str(doc["_id"]).encode()).hexdigest()[:40],
        "payload": {
            "schema_version": 2, "purpose_ref": PURPOSE,
            "valid_time": {"t": 1_700_000_000_000},
            "components": components, "primary_component_id": "c1",
            "primary_event": {"at": 1_700_000_000_000, "type_ref": "event:eval",
                              "citation_id": "cit1"},
            "citations": [{"citation_id": "cit1", "source_ref": "eval:corpus",
                           "locator": {"scheme": "urn", "value": "urn:eval"},
                           "content_digest": source}],
        },
        "evidence": {"evidence_ref": "ev:eval", "evidence_digest": source,
                     "citation_ids": ["cit1"]},
    }


def stored_record(scope: Scope, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(record id, effective payload) as capture and admission derive them; raises the
    contract's error when capture refuses the document."""
    model = validate_arguments(Tool.CAPTURE, arguments)
    payload = getattr(model, "payload")  # noqa: B009 - CaptureArgs' fields
    if any(find_secret(t) is not None
           for t in capture_texts(payload, getattr(model, "evidence"))):  # noqa: B009
        raise EngramError  # capture's secret screen refuses it (INVALID_SCHEMA)
    args = canonical_arguments(model)["payload"]
    effective = records.effective_payload(args, records.resolve_retention(
        args.get("retention"), now_ms=0, retain_allowed=False, ceiling_ms=1))
    return record_id_for(records.record_digest_for(scope, effective)), effective


# --- in process -------------------------------------------------------------------------


class ExactIndex:
    """The local service's vector index without moto: every vector of every scope in
    memory, queried with the same exact cosine top-k and the same keys (ties included)."""

    version = "eval:exact"

    def __init__(self) -> None:
        self._vectors: dict[str, Vector] = {}

    def put(self, scope: Scope, record_id: str, vector: Vector) -> None:
        self._vectors[vector_key(scope, record_id)] = vector

    def delete(self, scope: Scope, record_id: str) -> None:
        self._vectors.pop(vector_key(scope, record_id), None)

    def query(self, scope: Scope, vector: Vector, top_k: int) -> list[VectorHit]:
        keys = [k for k in self._vectors if k.startswith(scope.key + "#")]
        ranked = exact_top_k(vector, keys, [self._vectors[k] for k in keys], top_k)
        hits = [(record_of(scope, key), similarity) for key, similarity in ranked]
        return [VectorHit(rid, sim) for rid, sim in hits if rid is not None]


def deployment_settings(overrides: Mapping[str, str] | None = None) -> Settings:
    """The settings the search function would read in this environment (+ overrides)."""
    return Settings.from_env({**_PLACEHOLDERS, **os.environ, **(overrides or {})})


@dataclass
class ScopeIndex:
    """One workspace's lexical index and its record id → document id map."""

    postings: Any
    stats: Any
    doc_of: dict[str, str]


@dataclass
class Channels:
    """Each judged query's two channel rankings, as search computes them before fusion."""

    lexical: dict[str, Sequence[ScoredRecord]] = field(default_factory=dict)
    semantic: dict[str, Sequence[ScoredRecord]] = field(default_factory=dict)
    doc_of: dict[str, str] = field(default_factory=dict)  # record id → document id
    refused: list[str] = field(default_factory=list)


def index_in_process(beir: BeirSet, scope_field: str | None, channel: SemanticChannel | None
                     ) -> tuple[dict[str, ScopeIndex], list[str]]:
    """What the projector builds, per workspace; the documents capture refuses."""
    names = workspaces(beir, scope_field)
    by_scope: dict[str, dict[str, dict[str, Any]]] = {}
    doc_of: dict[str, dict[str, str]] = {}
    refused: list[str] = []
    pending: list[tuple[Scope, str, dict[str, Any]]] = []
    for doc in beir.docs:
        scope = Scope(TENANT, names[scope_value(doc, scope_field)])
        try:
            record_id, record = stored_record(scope, capture_arguments(doc))
        except EngramError:
            refused.append(str(doc["_id"]))
            continue
        if record_id in by_scope.setdefault(scope.workspace_id, {}):
            continue  # the same record again: admission answers duplicate_exact
        by_scope[scope.workspace_id][record_id] = record
        doc_of.setdefault(scope.workspace_id, {})[record_id] = str(doc["_id"])
        pending.append((scope, record_id, record))
    if channel is not None:  # the projector's batch path: one embed call per stream batch
        for start in range(0, len(pending), PROJECTOR_BATCH):
            channel.index_records(pending[start:start + PROJECTOR_BATCH])
    indexes = {}
    for workspace, recs in by_scope.items():
        postings, stats = build_index(record_document(rid, rec) for rid, rec in recs.items())
        indexes[workspace] = ScopeIndex(postings, stats, doc_of[workspace])
    return indexes, refused


def channels_in_process(beir: BeirSet, scope_field: str | None, queries: list[dict[str, Any]],
                        semantic: bool = True) -> Channels:
    """Both channels' rankings of every query, computed as the Lambdas compute them."""
    settings = deployment_settings()
    channel = None
    if semantic:
        embedder = semantic_wiring.embedder(settings)
        channel = SemanticChannel(embedder, ExactIndex())
    indexes, refused = index_in_process(beir, scope_field, channel)
    config = ranking_config(settings)
    names = workspaces(beir, scope_field)
    out = Channels(refused=refused)
    for built in indexes.values():
        out.doc_of.update(built.doc_of)
    for query in queries:
        qid, workspace = str(query["_id"]), names[scope_value(query, scope_field)]
        index = indexes.get(workspace)
        text = str(query["text"])
        out.lexical[qid] = (score_top_k(query_terms(text), index.postings, index.stats, config)
                            if index is not None else [])
        if channel is not None:
            scope = Scope(TENANT, workspace)
            out.semantic[qid] = channel.with_tail(channel.nearest(scope, text), {})
    return out


def planner(overrides: Mapping[str, str], semantic: SemanticChannel | None = None
            ) -> ChannelPlanner:
    """The search function's channel planner under these settings."""
    settings = deployment_settings(overrides)
    return ChannelPlanner(ranking_config(settings),
                          semantic_wiring.channel_settings(settings, semantic))


def rank_mode(mode: str, channels: Channels, qid: str,
              overrides: Mapping[str, str] | None = None) -> list[str]:
    """One query's top documents in one mode (fused as search fuses)."""
    lexical = channels.lexical[qid]
    if mode == "lexical":
        ranked = lexical
    else:
        settings = {**MODE_SETTINGS[mode], **(overrides or {})}
        ranked = planner(settings).fuse(list(lexical), list(channels.semantic[qid]))
    return [channels.doc_of[h.record_id] for h in ranked[:DEPTH]]


def rankings_in_process(beir: BeirSet, scope_field: str | None, queries: list[dict[str, Any]],
                        modes: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """Mode → query id → ranked document ids."""
    channels = channels_in_process(beir, scope_field, queries,
                                   semantic=any(m != "lexical" for m in modes))
    return {mode: {str(q["_id"]): rank_mode(mode, channels, str(q["_id"])) for q in queries}
            for mode in modes}


# --- through the service ----------------------------------------------------------------


@contextmanager
def _mode_environment(overrides: Mapping[str, str]) -> Iterator[None]:
    from engram_memory import bootstrap
    from engram_memory.composition import search as search_root

    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    bootstrap.settings.cache_clear()
    search_root.service.cache_clear()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        bootstrap.settings.cache_clear()
        search_root.service.cache_clear()


def rankings_service(beir: BeirSet, scope_field: str | None, queries: list[dict[str, Any]],
                     modes: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """Capture, admit, project, then search over MCP: mode → query id → document ids."""
    import harness
    from engram_memory.local.projector_pump import drain
    from harness import Bench, silenced

    names = workspaces(beir, scope_field)
    assert harness.TENANT == TENANT  # the same record ids on both paths
    with silenced():
        bench = Bench(workspaces=tuple(names.values()))
        try:
            doc_of = _ingest(bench, beir, scope_field, names)
            drain(bench.service.settings)
            runs: dict[str, dict[str, list[str]]] = {}
            for mode in modes:
                with _mode_environment(MODE_SETTINGS[mode]):
                    runs[mode] = asyncio.run(_search_all(bench, queries, scope_field, names,
                                                         doc_of, MODE_POLICY[mode]))
        finally:
            bench.close()
    return runs


def _ingest(bench: Any, beir: BeirSet, scope_field: str | None,
            names: Mapping[str, str]) -> dict[str, str]:
    """Capture + admit every document through the tool handlers: record id → document id."""
    bench.pause_pumps()  # one drain after the ingest (the ranking does not depend on when)
    doc_of: dict[str, str] = {}
    for doc in beir.docs:
        workspace = names[scope_value(doc, scope_field)]
        arguments = capture_arguments(doc)
        outcome = bench.direct(Tool.CAPTURE, arguments, workspace_id=workspace,
                               purpose_ref=PURPOSE)
        if outcome["ok"]:
            outcome = bench.direct(Tool.REQUEST_ADMISSION, {
                "candidate_id": outcome["output"]["value"]["candidate_id"],
                "idempotency_key": arguments["idempotency_key"] + "-admit"},
                workspace_id=workspace, purpose_ref=PURPOSE)
        if outcome["ok"]:
            record_id = outcome["output"]["value"]["outcome"]["record_id"]
            doc_of.setdefault(record_id, str(doc["_id"]))
    return doc_of


async def _search_all(bench: Any, queries: list[dict[str, Any]], scope_field: str | None,
                      names: Mapping[str, str], doc_of: Mapping[str, str],
                      policy: dict[str, str]) -> dict[str, list[str]]:
    from harness import PRINCIPAL, envelope_of

    def token(workspace: str) -> str:
        return str(bench.service.mint(workspace=workspace, purpose_ref=PURPOSE,
                                      capabilities=[t.value for t in Tool],
                                      principal=PRINCIPAL))

    rankings: dict[str, list[str]] = {}
    bearer = [token(next(iter(names.values())))]  # the session's own requests need one too
    async with bench.client(bearer) as client:
        for query in queries:
            workspace = names[scope_value(query, scope_field)]
            ranked: list[str] = []
            args: dict[str, Any] = {"query": str(query["text"]), "purpose_ref": PURPOSE,
                                    "limit": 50, "capability_policy": policy}
            while len(ranked) < DEPTH:
                bearer[0] = token(workspace)
                envelope = envelope_of(await client.call_tool(Tool.SEARCH.mcp_name, args))
                if not envelope["ok"]:
                    raise RuntimeError(f"search failed: {envelope['error']['code']}")
                value = envelope["output"]["value"]
                ranked += [doc_of[p["record"]["record_id"]] for p in value["records"]]
                if not value.get("next_page_cursor"):
                    break
                args = {**args, "page_cursor": value["next_page_cursor"]}
            rankings[str(query["_id"])] = ranked[:DEPTH]
    return rankings


# --- measures ---------------------------------------------------------------------------


def measures(rankings: Mapping[str, list[str]], qrels: Mapping[str, Mapping[str, int]],
             qids: Sequence[str]) -> dict[str, float]:
    """Mean nDCG@10 (linear gains), Recall@10, Recall@100 over ``qids``."""
    def avg(measure: Callable[[Sequence[str], Mapping[str, int], int], float], k: int) -> float:
        return round(mean([measure(rankings[q], qrels[q], k) for q in qids]), 4)

    return {"ndcg@10": avg(ndcg_linear_at, 10), "recall@10": avg(recall_at, 10),
            "recall@100": avg(recall_at, DEPTH)}


def evaluate(beir: BeirSet, scope_field: str | None, path: str, modes: Sequence[str],
             limit: int | None, rankings_out: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``--json`` document: counts and each mode's measures (``rankings_out`` receives
    mode → query id → ranked document ids)."""
    queries = judged_queries(beir, limit)
    run = rankings_service if path == "service" else rankings_in_process
    rankings = run(beir, scope_field, queries, modes)
    if rankings_out is not None:
        rankings_out.update(rankings)
    qids = [str(q["_id"]) for q in queries]
    return {"docs": len(beir.docs), "queries": len(queries),
            "modes": {mode: measures(rankings[mode], beir.qrels, qids) for mode in modes}}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, required=True,
                        help="folder with corpus.jsonl, queries.jsonl, qrels.tsv")
    parser.add_argument("--scope-field", default=None,
                        help="one workspace per value of this field (documents and queries)")
    parser.add_argument("--path", choices=("in-process", "service"), default="in-process")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N judged queries")
    parser.add_argument("--json", type=Path, default=None, help="write the result here")
    parser.add_argument("--rankings", type=Path, default=None,
                        help="write every query's top 100 document ids per mode here")
    options = parser.parse_args(argv)
    rankings: dict[str, Any] = {}
    result = evaluate(load_beir(options.beir), options.scope_field, options.path,
                      options.modes, options.limit, rankings)
    print(f"{options.beir}: {result['docs']} documents, {result['queries']} judged queries, "
          f"path {options.path}")
    print("| mode | nDCG@10 | R@10 | R@100 |\n|---|---|---|---|")
    for mode, values in result["modes"].items():
        print(f"| {mode} | {values['ndcg@10']:.4f} | {values['recall@10']:.4f} | "
              f"{values['recall@100']:.4f} |")
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if options.rankings:
        options.rankings.write_text(json.dumps(rankings) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

