"""Embedding models compared on Cranfield and LoCoMo (dev), semantic alone and hybrid.

Run: ``.venv/bin/python bench/model_choice.py MODEL_DIR [MODEL_DIR ...] [--sets cranfield
locomo-dev] [--json OUT]``. Each MODEL_DIR is a model folder the adapter loads
(``models/<name>/``: model.onnx, tokenizer.json, MANIFEST.json). Per set, the lexical
ranking is BM25F as search computes it (each term's best postings within the per-search
budget, one index per scope: LoCoMo has one scope per conversation, Cranfield one), the
semantic ranking the model's cosine top 100 within the scope (what QueryVectors returns),
and hybrid fuses them with the deployment's default fusion (domain/fusion.py,
``FusionConfig()``). A document becomes a record as the benches store it: its title as
primary (Cranfield: the title, else the abstract's first 200 characters; LoCoMo: none),
its text as context; the embedded text is primary then context, newline separated, or the
text alone when there is no title. Queries are split in halves by their position in
queries.jsonl (even = dev, where a model is chosen; odd = held out, only reported).
Printed per set, model and half: nDCG@10 (linear gains), Recall@10, Recall@100. The
LoCoMo data is CC BY-NC: read from ../shared at run time, never copied.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.adapters.vectors.exact_top_k import exact_top_k
from engram_memory.domain.fusion import SEMANTIC_TOP_K, FusionConfig, fuse
from engram_memory.domain.impact import score_top_k
from engram_memory.domain.ranking import FieldDocument, ScoredRecord, build_index
from engram_memory.domain.tokenizer import query_terms
from harness import table
from ir_eval import mean, ndcg_linear_at, primary_text, recall_at
from reference_data import reference_data

DATA = reference_data()
Embed = Callable[[list[str]], list[tuple[float, ...]]]


@dataclass(frozen=True)
class Scoped:
    """A BEIR-style set with one scope per document and per query."""

    primary: dict[str, str]  # doc id → primary text ("" when none)
    text: dict[str, str]  # doc id → context text
    doc_scope: dict[str, str]
    queries: dict[str, str]
    query_scope: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(folder: Path, scope_field: str | None) -> Scoped:
    """corpus.jsonl, queries.jsonl and qrels.tsv of one set."""
    primary, text, doc_scope = {}, {}, {}
    for row in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8")):
        title = row.get("title", "")
        primary[row["_id"]] = primary_text(title, row["text"]) if scope_field is None else ""
        text[row["_id"]] = row["text"]
        doc_scope[row["_id"]] = row.get(scope_field, "") if scope_field else ""
    queries, query_scope = {}, {}
    for row in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8")):
        queries[row["_id"]] = row["text"]
        query_scope[row["_id"]] = row.get(scope_field, "") if scope_field else ""
    qrels: dict[str, dict[str, int]] = {}
    for line in list((folder / "qrels.tsv").open(encoding="utf-8"))[1:]:
        query, doc, score = line.rstrip("\n").split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    docs = [d for d in text if primary[d] or text[d]]
    return Scoped({d: primary[d] for d in docs}, {d: text[d] for d in docs},
                  {d: doc_scope[d] for d in docs}, queries, query_scope, qrels)


def embedded_text(data: Scoped, doc: str) -> str:
    """Primary, then context; the text alone when the record has no primary of its own."""
    return f"{data.primary[doc]}\n{data.text[doc]}" if data.primary[doc] else data.text[doc]


def rankings(data: Scoped, judged: list[str], embed: Embed
             ) -> dict[str, dict[str, list[str]]]:
    """lexical, semantic and hybrid rankings (record ids) of every judged query."""
    scopes = sorted(set(data.doc_scope.values()))
    docs = list(data.text)
    vectors = dict(zip(docs, embed([embedded_text(data, d) for d in docs]), strict=True))
    query_vectors = dict(zip(judged, embed([data.queries[q] for q in judged]), strict=True))
    out: dict[str, dict[str, list[str]]] = {"lexical": {}, "semantic": {}, "hybrid": {}}
    for scope in scopes:
        members = [d for d in docs if data.doc_scope[d] == scope]
        postings, stats = build_index(FieldDocument(d, {"primary": data.primary[d],
                                                        "context": data.text[d]})
                                      for d in members)
        member_vectors = [vectors[d] for d in members]
        for q in (q for q in judged if data.query_scope[q] == scope):
            lexical = score_top_k(query_terms(data.queries[q]), postings, stats)
            semantic = [ScoredRecord(d, s) for d, s in exact_top_k(
                query_vectors[q], members, member_vectors, SEMANTIC_TOP_K)]
            for mode, ranked in (("lexical", lexical), ("semantic", semantic),
                                 ("hybrid", fuse(lexical, semantic, FusionConfig()))):
                out[mode][q] = [h.record_id for h in ranked]
    return out


def measures(ranked: dict[str, list[str]], data: Scoped, queries: list[str]) -> list[float]:
    """nDCG@10 (linear), Recall@10, Recall@100."""
    return [mean([ndcg_linear_at(ranked[q], data.qrels[q]) for q in queries]),
            mean([recall_at(ranked[q], data.qrels[q], 10) for q in queries]),
            mean([recall_at(ranked[q], data.qrels[q], 100) for q in queries])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("--sets", nargs="+", default=["cranfield", "locomo-dev"])
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    results: dict[str, list[float]] = {}
    rows = []
    for name in options.sets:
        data = load(DATA / name, "conversation" if name.startswith("locomo") else None)
        judged = [q for q in data.queries if data.qrels.get(q)]
        halves = {"dev": judged[0::2], "held-out": judged[1::2]}
        for folder in options.models:
            embedder = OnnxEmbedder(folder)
            ranked = rankings(data, judged, embedder.embed)
            for mode, runs in ranked.items():
                if mode == "lexical" and folder != options.models[0]:
                    continue
                label = "lexical BM25F" if mode == "lexical" else f"{mode}: {folder.name}"
                for half, queries in halves.items():
                    values = measures(runs, data, queries)
                    results[f"{name} | {label} | {half}"] = values
                    rows.append([name, label, half, *(f"{v:.4f}" for v in values)])
            print(f"[{name}] {folder.name} done", flush=True)
    print(table(["set", "ranking", "half", "nDCG@10", "R@10", "R@100"], rows))
    if options.json:
        options.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
