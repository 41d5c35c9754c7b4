"""nDCG@10 of the shipped BM25F ranker on Cranfield, with and without a light S-stemmer.

Run: ``.venv/bin/python bench/cranfield_eval.py [data_dir]``. Title → primary field,
abstract → context field. The stemmer variant is evaluated by wrapping the tokenizer; a
paired permutation test says whether the difference is more than noise.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

from engram_memory.domain import ranking, tokenizer

DEFAULT_DATA = Path("/work/shared/data/cranfield")


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
    tokenizer.tokenize = tokenize
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


if __name__ == "__main__":
    main()
