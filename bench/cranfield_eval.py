"""Cranfield: the shipped BM25F ranker with and without a light S-stemmer, and impact top-K.

Run: ``.venv/bin/python bench/cranfield_eval.py [data_dir]``. Title → primary field,
abstract → context field. The stemmer variant is evaluated by wrapping the tokenizer; a
paired permutation test says whether the difference is more than noise.

Impact top-K (domain/impact.py): exhaustive scoring (every posting of every query term,
what search did before) against scoring only each term's best K postings by impact with
the exact df, as search does over the projection, for several K: nDCG@10, Recall@100
(relevant = qrel grade > 0) and how many queries change at all.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from engram_memory.domain import impact, ranking, tokenizer
from reference_data import reference_data

DEFAULT_DATA = reference_data() / "cranfield"  # bench/reference_data.py


def s_stem(word: str) -> str:
    """Harman's S-stemmer: strips English plural endings only."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


Qrels = dict[str, dict[str, int]]


def load(data: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], Qrels]:
    """Corpus, queries and graded qrels."""
    docs = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text().splitlines()]
    qrels: Qrels = {}
    for line in (data / "qrels.tsv").read_text().splitlines()[1:]:
        qid, did, gain = line.split()
        qrels.setdefault(qid, {})[did] = int(gain)
    return docs, queries, qrels


def per_query_ndcg(
    docs: list[dict[str, str]],
    queries: list[dict[str, str]],
    qrels: Qrels,
    tokenize: Callable[[str], list[str]],
) -> list[float]:
    """nDCG@10 per query with the given tokenizer swapped in."""
    original = tokenizer.tokenize
    tokenizer.tokenize = tokenize  # type: ignore[assignment]
    try:
        postings, stats = ranking.build_index(
            ranking.FieldDocument(d["_id"], {"primary": d["title"], "context": d["text"]})
            for d in docs
        )
        scores = []
        for query in queries:
            rel = qrels.get(query["_id"], {})
            hits = ranking.score_postings(tokenizer.query_terms(query["text"]), postings, stats)
            dcg = sum((2 ** rel.get(h.record_id, 0) - 1) / math.log2(i + 2)
                      for i, h in enumerate(hits[:10]))
            ideal = sorted(rel.values(), reverse=True)[:10]
            idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
            scores.append(dcg / idcg if idcg else 0.0)
        return scores
    finally:
        tokenizer.tokenize = original


def _permutation_p(diffs: list[float], trials: int = 5000) -> float:
    observed = abs(sum(diffs) / len(diffs))
    if observed == 0.0:
        return 1.0
    rng = random.Random(1)
    extreme = sum(
        abs(sum(d if rng.random() < 0.5 else -d for d in diffs) / len(diffs)) >= observed
        for _ in range(trials)
    )
    return extreme / trials


def _metrics(hits: Sequence[ranking.ScoredRecord], rel: dict[str, int]) -> tuple[float, float]:
    """nDCG@10 and Recall@100 of one ranked list."""
    dcg = sum((2 ** rel.get(h.record_id, 0) - 1) / math.log2(i + 2)
              for i, h in enumerate(hits[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    relevant = {d for d, g in rel.items() if g > 0}
    found = sum(1 for h in hits[:100] if h.record_id in relevant)
    return (dcg / idcg if idcg else 0.0), (found / len(relevant) if relevant else 0.0)


def impact_top_k(docs: list[dict[str, str]], queries: list[dict[str, str]], qrels: Qrels,
                 ks: list[int]) -> None:
    """Print exhaustive vs best-K-per-term scoring for each K."""
    postings, stats = ranking.build_index(
        ranking.FieldDocument(d["_id"], {"primary": d["title"], "context": d["text"]})
        for d in docs
    )
    ordered = {t: impact.top_postings(p, len(p)) for t, p in postings.items()}
    dfs = {t: len(p) for t, p in postings.items()}
    terms = [tokenizer.query_terms(q["text"]) for q in queries]
    base = [ranking.score_postings(ts, postings, stats) for ts in terms]
    base_m = [_metrics(h, qrels.get(q["_id"], {})) for h, q in zip(base, queries, strict=True)]
    print(f"max df = {max(dfs.values())}; exhaustive: nDCG@10 "
          f"{sum(m[0] for m in base_m) / len(base_m):.4f}, Recall@100 "
          f"{sum(m[1] for m in base_m) / len(base_m):.4f}")
    print(f"{'K':>6} {'nDCG@10':>8} {'p':>6} {'R@100':>7} {'p':>6} "
          f"{'top10 changed':>14} {'postings read':>14}")
    for k in ks:
        read = 0
        runs = []
        for ts in terms:
            selected = {t: ordered.get(t, [])[:k] for t in ts}
            read += sum(len(p) for p in selected.values())
            runs.append(ranking.score_postings(ts, selected, stats, document_frequencies=dfs))
        m = [_metrics(h, qrels.get(q["_id"], {})) for h, q in zip(runs, queries, strict=True)]
        changed = sum(1 for a, b in zip(base, runs, strict=True)
                      if [h.record_id for h in a[:10]] != [h.record_id for h in b[:10]])
        p_ndcg = _permutation_p([b[0] - a[0] for a, b in zip(base_m, m, strict=True)])
        p_rec = _permutation_p([b[1] - a[1] for a, b in zip(base_m, m, strict=True)])
        print(f"{k:>6} {sum(x[0] for x in m) / len(m):>8.4f} {p_ndcg:>6.3f} "
              f"{sum(x[1] for x in m) / len(m):>7.4f} {p_rec:>6.3f} {changed:>14} "
              f"{read / len(terms):>14.0f}")


def main() -> None:
    """Print both variants and a paired permutation test."""
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    docs, queries, qrels = load(data)
    original = tokenizer.tokenize
    plain = per_query_ndcg(docs, queries, qrels, original)
    stemmed = per_query_ndcg(docs, queries, qrels, lambda t: [s_stem(w) for w in original(t)])
    diffs = [s - p for p, s in zip(plain, stemmed, strict=True)]
    observed = sum(diffs) / len(diffs)
    rng = random.Random(1)
    trials = 5000
    extreme = sum(
        abs(sum(d if rng.random() < 0.5 else -d for d in diffs) / len(diffs)) >= abs(observed)
        for _ in range(trials)
    )
    print(f"queries={len(queries)} docs={len(docs)}")
    print(f"nDCG@10 shipped (no stemming): {sum(plain) / len(plain):.4f}")
    print(f"nDCG@10 with S-stemmer:        {sum(stemmed) / len(stemmed):.4f}")
    better = sum(d > 1e-12 for d in diffs)
    worse = sum(d < -1e-12 for d in diffs)
    print(f"stemmer better on {better}, worse on {worse}; permutation p = {extreme / trials:.3f}")
    print("impact top-K per term vs exhaustive (p: paired permutation vs exhaustive)")
    impact_top_k(docs, queries, qrels, [25, 50, 100, 200, 400, ranking.DEFAULT_POSTINGS_PER_TERM])


if __name__ == "__main__":
    main()
