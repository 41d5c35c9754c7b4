"""How the fusion rule was chosen: every candidate rule on Cranfield, in process, held out.

Run: ``.venv/bin/python bench/fusion_choice.py [--fp32 DIR]`` (~3 minutes here; with
``--fp32`` a second model folder, e.g. the unquantized export, is compared too). Both
channels are computed as the service computes them, on the text it stores: the lexical
ranking is BM25F over each term's best postings within the per-search budget
(domain/impact.py, domain/ranking.py), the semantic one the committed model's cosine top
100 (what QueryVectors returns), each text embedded alone as the projector does; each rule
fuses the two with domain/fusion.py. The queries are split in two: a rule is chosen on the
odd query ids (dev) and judged on the even ones (test), so the choice is not tuned on what
it is judged on. Printed: nDCG@10 (linear gains) per half and overall for every candidate,
the rule dev picks, the four measures for lexical, semantic, shipped and picked, and paired
permutation p-values (5,000 trials) on the test half. The shipped numbers through the
service are bench/ranking_quality.py's.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from engram_memory.adapters.embedding.onnx_embedder import OnnxEmbedder
from engram_memory.adapters.vectors.exact_top_k import exact_top_k
from engram_memory.domain.fusion import SEMANTIC_TOP_K, FusionConfig, fuse
from engram_memory.domain.impact import score_top_k
from engram_memory.domain.ranking import FieldDocument, ScoredRecord, build_index
from engram_memory.domain.tokenizer import query_terms
from harness import ROOT, table
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

DATA = ROOT.parent / "shared" / "data" / "cranfield"
Ranked = dict[str, list[ScoredRecord]]
SHIPPED_BEFORE = FusionConfig(rule="rrf", rrf_k=60)
CANDIDATES = [
    *(FusionConfig(rule="rrf", rrf_k=k, lexical_weight=w)
      for k in (10, 20, 30, 60, 100) for w in (0.5, 0.7, 1.0, 1.3, 1.5, 2.0, 3.0)),
    *(FusionConfig(rule="convex", lexical_weight=w) for w in (0.3, 0.5, 0.7, 1.0, 1.3, 1.5, 2.0)),
]


def split(judged: list[str]) -> tuple[list[str], list[str]]:
    """Dev (odd query ids: where a rule is chosen) and test (even ids: where it is judged)."""
    return ([q for q in judged if int(q) % 2 == 1], [q for q in judged if int(q) % 2 == 0])


def label(config: FusionConfig) -> str:
    """One candidate's row name."""
    return f"{config.rule} k={config.rrf_k} w_lex={config.lexical_weight}"


def primary(doc_id: str, text: str, title: dict[str, str]) -> str:
    """The primary text the service was given for a document."""
    return primary_text(title[doc_id], text)


def documents(collection: Collection, title: dict[str, str]) -> dict[str, str]:
    """The documents the service accepts (471 and 995 are empty: refused at capture)."""
    return {d: text for d, text in collection.docs.items() if primary(d, text, title)}


def lexical(collection: Collection, title: dict[str, str], judged: list[str]) -> Ranked:
    """BM25F as the service ranks: each term's best postings within the per-search budget."""
    postings, stats = build_index(FieldDocument(d, {"primary": primary(d, text, title),
                                                    "context": text})
                                  for d, text in documents(collection, title).items())
    return {q: score_top_k(query_terms(collection.queries[q]), postings, stats)
            for q in judged}


def semantic(folder: Path, collection: Collection, title: dict[str, str],
             judged: list[str]) -> Ranked:
    """The model's cosine top 100 over the text the service embeds (primary, then context)."""
    embedder = OnnxEmbedder(folder)
    docs = documents(collection, title)
    ids = list(docs)
    vectors = embedder.embed([f"{primary(d, docs[d], title)}\n{docs[d]}" for d in ids])
    queries = embedder.embed([collection.queries[q] for q in judged])
    return {q: [ScoredRecord(d, similarity) for d, similarity in
                exact_top_k(query, ids, vectors, SEMANTIC_TOP_K)]
            for q, query in zip(judged, queries, strict=True)}


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
    dev, test = split(judged)
    lex = lexical(collection, title, judged)
    models = {"int8": ROOT / "models" / "all-minilm-l6-v2"}
    if options.fp32:
        models["fp32"] = options.fp32
    ids = {"lexical BM25F": {q: [h.record_id for h in lex[q]] for q in judged}}
    for name, folder in models.items():
        sem = semantic(folder, collection, title, judged)
        ids[f"semantic {name}"] = {q: [h.record_id for h in sem[q]] for q in judged}
        for config in CANDIDATES:
            ids[f"{name} {label(config)}"] = {
                q: [h.record_id for h in fuse(lex[q], sem[q], config)] for q in judged}

    def score(name: str, queries: list[str]) -> float:
        return mean([ndcg_linear_at(ids[name][q], collection.qrels[q]) for q in queries])

    fused = [name for name in ids if name.startswith("int8 ")]
    chosen = max(fused, key=lambda name: (round(score(name, dev), 4), name == "int8 "
                                          + label(SHIPPED_BEFORE)))
    print(f"Cranfield, {len(judged)} judged queries ({len(dev)} dev = odd ids, "
          f"{len(test)} test = even ids), {len(collection.docs)} documents")
    print(table(["ranking", "nDCG@10 lin dev", "nDCG@10 lin test", "nDCG@10 lin all"],
                [[name, *(f"{score(name, qs):.4f}" for qs in (dev, test, judged))]
                 for name in ids]))
    print(f"chosen on dev: {chosen}")
    rows = ["lexical BM25F", "semantic int8", "int8 " + label(SHIPPED_BEFORE), chosen]
    print(table(["ranking (all queries)", "nDCG@10 lin", "nDCG@10 exp", "Recall@10",
                 "Recall@100"],
                [[name, *measures(ids[name], collection, judged)] for name in rows]))

    def per_query(name: str, queries: list[str]) -> list[float]:
        return [ndcg_linear_at(ids[name][q], collection.qrels[q]) for q in queries]

    pairs = [(chosen, "lexical BM25F"), (chosen, "int8 " + label(SHIPPED_BEFORE)),
             ("int8 " + label(SHIPPED_BEFORE), "lexical BM25F")]
    print(table(["comparison on the test half (nDCG@10 lin)", "difference", "p"],
                [[f"{a} vs {b}", f"{score(a, test) - score(b, test):+.4f}",
                  f"{permutation_p(per_query(a, test), per_query(b, test)):.3f}"]
                 for a, b in pairs]))


if __name__ == "__main__":
    main()
