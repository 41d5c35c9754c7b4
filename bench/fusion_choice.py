"""How the fusion rule was chosen: every candidate rule on all of Cranfield, in process.

Run: ``.venv/bin/python bench/fusion_choice.py [--fp32 DIR]`` (~3 minutes here; with
``--fp32`` a second model folder, e.g. the unquantized export, is compared too). The
lexical ranking is the service's BM25F over every posting (domain/ranking.py, identical to
the service at the shipped K, docs/search.md); the semantic ranking is the committed model's
cosine top 100 (what QueryVectors returns); each rule fuses the two with domain/fusion.py.
Printed: nDCG@10 (linear and exponential gains), Recall@10, Recall@100, and paired
permutation p-values (5,000 trials, nDCG@10 linear) for the comparisons the choice rests on.
The shipped numbers through the service are bench/ranking_quality.py's.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.domain.fusion import FusionConfig, fuse
from engram_memory.domain.ranking import FieldDocument, ScoredRecord, build_index, score_postings
from engram_memory.domain.tokenizer import query_terms
from harness import ROOT, table
from ir_eval import Collection, load_cranfield, mean, ndcg_at, ndcg_linear_at, recall_at

DATA = ROOT.parent / "shared" / "data" / "cranfield"
Ranked = dict[str, list[ScoredRecord]]
CANDIDATES = [
    *(FusionConfig(rule="rrf", rrf_k=k) for k in (10, 30, 60, 100)),
    *(FusionConfig(rule="rrf", lexical_weight=w) for w in (0.5, 1.5, 2.0)),
    *(FusionConfig(rule="convex", lexical_weight=w) for w in (0.3, 0.5, 1.0, 1.5, 2.0)),
]


def titles(folder: Path) -> dict[str, str]:
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        return {row["_id"]: row.get("title", "") for row in map(json.loads, fh)}


def lexical(collection: Collection, title: dict[str, str], judged: list[str]) -> Ranked:
    docs = [FieldDocument(d, {"primary": title[d].strip() or text[:200], "context": text})
            for d, text in collection.docs.items()]
    postings, stats = build_index(docs)
    return {q: score_postings(query_terms(collection.queries[q]), postings, stats)
            for q in judged}


def semantic(folder: Path, collection: Collection, title: dict[str, str],
             judged: list[str]) -> Ranked:
    embedder = OnnxEmbedder(folder)
    ids = list(collection.docs)
    docs = np.array(embedder.embed([f"{title[d].strip()}\n{collection.docs[d]}" for d in ids]))
    queries = np.array(embedder.embed([collection.queries[q] for q in judged]))
    out: Ranked = {}
    for row, q in zip(queries @ docs.T, judged, strict=True):
        top = sorted(range(len(ids)), key=lambda j: (-round(float(row[j]), 9), ids[j]))[:100]
        out[q] = [ScoredRecord(ids[j], round(float(row[j]), 9)) for j in top]
    return out


def measures(runs: dict[str, list[str]], collection: Collection, judged: list[str]) -> list[str]:
    return [f"{mean([m(runs[q], collection.qrels[q], k) for q in judged]):.4f}"
            for m, k in ((ndcg_linear_at, 10), (ndcg_at, 10), (recall_at, 10), (recall_at, 100))]


def permutation_p(a: list[float], b: list[float], trials: int = 5000) -> float:
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    observed, rng, hits = abs(sum(diffs)), random.Random(7), 0
    for _ in range(trials):
        hits += abs(sum(d if rng.random() < 0.5 else -d for d in diffs)) >= observed
    return hits / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp32", type=Path, help="a second model folder to compare")
    options = parser.parse_args()
    collection, title = load_cranfield(DATA), titles(DATA)
    judged = [q for q in collection.queries if collection.qrels.get(q)]
    lex = lexical(collection, title, judged)
    models = {"int8": ROOT / "models" / "all-minilm-l6-v2"}
    if options.fp32:
        models["fp32"] = options.fp32
    ids = {"lexical BM25F": {q: [h.record_id for h in lex[q]] for q in judged}}
    for name, folder in models.items():
        sem = semantic(folder, collection, title, judged)
        ids[f"semantic {name}"] = {q: [h.record_id for h in sem[q]] for q in judged}
        for config in CANDIDATES:
            label = f"{name} {config.rule} k={config.rrf_k} w_lex={config.lexical_weight}"
            ids[label] = {q: [h.record_id for h in fuse(lex[q], sem[q], config)]
                          for q in judged}
    print(f"Cranfield, {len(judged)} judged queries, {len(collection.docs)} documents")
    print(table(["ranking", "nDCG@10 lin", "nDCG@10 exp", "Recall@10", "Recall@100"],
                [[name, *measures(runs, collection, judged)] for name, runs in ids.items()]))

    def per_query(name: str) -> list[float]:
        return [ndcg_linear_at(ids[name][q], collection.qrels[q]) for q in judged]

    shipped = "int8 rrf k=60 w_lex=1.0"
    pairs = [(shipped, "lexical BM25F"), (shipped, "int8 convex k=60 w_lex=1.0")]
    if options.fp32:
        pairs += [(shipped, "fp32 rrf k=60 w_lex=1.0"), ("semantic int8", "semantic fp32")]
    print(table(["comparison (nDCG@10 lin)", "p"],
                [[f"{a} vs {b}", f"{permutation_p(per_query(a), per_query(b)):.3f}"]
                 for a, b in pairs]))


if __name__ == "__main__":
    main()
