"""Quality at scale: the per-search postings budget's top-10 against exhaustive BM25F.

Run: ``.venv/bin/python bench/budget_quality.py [--records 50000] [--budgets 4000,8000]
[--per-term 1000] [--seed 25] [--queries all|odd|even]``. In process, with the service's own
ranking functions (``domain/ranking``, ``domain/impact``), no moto: what the budget changes
is which postings are scored, and that is decided by these functions alone.

The index: Cranfield's 1,400 documents (as the service stores them: title, or the
abstract's start, as the primary component; the abstract as context; the two empty ones
left out) planted among filler records up to ``--records``. Filler text is drawn from
Cranfield's own vocabulary with Zipf weights (rank r by frequency in Cranfield → weight
1/(r+1); fixed seed), shaped like memory records (a primary of 6–12 words, a context of
15–45), so the queries' terms are frequent in the fillers too: the hard case for a budget,
where a query term's df is far above the postings a search reads for it.

Per query (all 225, or the odd or even ids: choose on one half, report the other): the
exhaustive ranking scores every posting of every query term (``ranking.score_postings``,
exact df); the budgeted ranking is ``impact.score_top_k`` (each term's best
``postings_for(terms)`` postings by impact, exact df), as search reads the projection.
overlap@10 = |budgeted top 10 ∩ exhaustive top 10| / |exhaustive top 10|; nDCG@10 vs
exhaustive = DCG of the budgeted top 10 with each record's exhaustive score as its gain,
over the same for the exhaustive top 10 (a near-tie swapped costs almost nothing, a lost top
hit its score); the same with **score completion** as search does it (``domain/completion``:
the best ``completion_cap`` candidates by partial score scored with every query term, from
their own analyzed content); and the overlap if every candidate were completed, which tells
whether the loss is in the records found or in their scores. Beside them, Cranfield's own
judgements: nDCG@10 (linear gains) of both rankings, so a lost "exhaustive" hit can be seen
to matter or not."""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from engram_memory.domain import completion, impact
from engram_memory.domain.canonical import record_id_for
from engram_memory.domain.posting_blocks import BlockPosting, fewest_blocks
from engram_memory.domain.ranking import (
    DEFAULT_CONFIG,
    AnalyzedDocument,
    CorpusStats,
    FieldDocument,
    Posting,
    RankingConfig,
    ScoredRecord,
    build_index,
    score_postings,
)
from engram_memory.domain.tokenizer import query_terms
from harness import machine, table
from ir_eval import load_cranfield, ndcg_linear_at, primary_text, titles

WORD = re.compile(r"[a-z]+")


class Filler:
    """Memory-record-shaped texts in Zipf-weighted Cranfield vocabulary (fixed seed)."""

    def __init__(self, texts: Sequence[str], seed: int) -> None:
        counts = Counter(w for text in texts for w in WORD.findall(text.lower()))
        # Most frequent first; ties by the word, so the ranks never depend on dict order.
        self.words = [w for w, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
        weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.cumulative = list(_accumulate(weights))
        self.rng = random.Random(seed)

    def text(self, low: int, high: int) -> str:
        """Between ``low`` and ``high`` Zipf-distributed words."""
        n = self.rng.randint(low, high)
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))

    def document(self, n: int) -> FieldDocument:
        """Filler record number ``n``."""
        return FieldDocument(f"filler-{n:06d}", {"primary": self.text(6, 12),
                                                 "context": self.text(15, 45)})


def _accumulate(weights: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


@dataclass
class Index:
    """The in-memory projection: postings (impact order) and df per term, corpus stats."""

    ordered: dict[str, list[Posting]]
    stats: CorpusStats
    forward: dict[str, tuple[tuple[int, ...], dict[str, tuple[int, ...]]]]
    """Per record: its lengths and its query-vocabulary frequencies (what analysis gives)."""

    def analyzed(self, record_id: str) -> AnalyzedDocument:
        """The record as search's completion analyzes it (query-vocabulary terms only)."""
        lengths, frequencies = self.forward[record_id]
        return AnalyzedDocument(record_id, lengths, frequencies)


def build(documents: list[FieldDocument], query_vocabulary: set[str]) -> Index:
    """Index every document; keep the query terms' postings, highest impact first."""
    postings, stats = build_index(documents)
    ordered = {t: impact.top_postings(postings[t], len(postings[t]))
               for t in query_vocabulary if t in postings}
    forward: dict[str, tuple[tuple[int, ...], dict[str, tuple[int, ...]]]] = {}
    for term, term_postings in ordered.items():
        for p in term_postings:
            forward.setdefault(p.record_id, (p.lengths, {}))[1][term] = p.tf
    return Index(ordered, stats, forward)


SELECTION = ["blocks"]
"""How a term's share is chosen: ``blocks`` = as the packed posting blocks return it (the
fewest whole blocks in key order, domain/posting_blocks.fewest_blocks), ``impact`` = the
exact best by impact code (the per-posting layout before issue 33)."""
_SELECTED: dict[tuple[str, int], list[Posting]] = {}
_PRODUCT_IDS: dict[str, str] = {}


def _product_id(record_id: str) -> str:
    """A ``mem_`` id for a bench id: blocks range over ids as the service mints them."""
    found = _PRODUCT_IDS.get(record_id)
    if found is None:
        found = record_id_for("sha256:" + hashlib.sha256(record_id.encode()).hexdigest())
        _PRODUCT_IDS[record_id] = found
    return found


def selected(index: Index, term: str, k: int) -> list[Posting]:
    """The postings of ``term`` a search reads for a share of ``k`` (see SELECTION)."""
    ordered = index.ordered.get(term, [])
    if SELECTION[0] == "impact" or len(ordered) <= k:
        return ordered[:k]
    found = _SELECTED.get((term, k))
    if found is None:
        back = {_product_id(p.record_id): p for p in ordered}
        entries = [BlockPosting(impact.impact_code(p.tf, p.lengths),
                                Posting(_product_id(p.record_id), p.tf, p.lengths))
                   for p in ordered]
        found = [back[p.record_id] for p in fewest_blocks(entries, k)]
        _SELECTED[(term, k)] = found
    return found


def budgeted(terms: Sequence[str], index: Index, config: RankingConfig) -> Sequence[ScoredRecord]:
    """``impact.score_top_k`` on pre-ordered postings (same selection, read once).

    score_top_k sorts each term's postings by impact on every call; with the lists
    already in that order its selection is their first ``postings_for`` items, so this is
    the same ranking at a fraction of the time (checked against score_top_k in ``main``).
    """
    k = config.postings_for(len(terms))
    chosen = {t: selected(index, t, k) for t in terms}
    dfs = {t: len(index.ordered.get(t, [])) for t in terms}
    return score_postings(terms, chosen, index.stats, config, dfs)


def completed(terms: Sequence[str], index: Index, config: RankingConfig,
              ranked: Sequence[ScoredRecord]) -> tuple[Sequence[ScoredRecord], int]:
    """The budgeted ranking with search's score completion; the records it read (the
    best ``completion_cap`` candidates that lack a posting under an open term)."""
    k = config.postings_for(len(terms))
    read = {t: selected(index, t, k) for t in terms}
    dfs = {t: len(index.ordered.get(t, [])) for t in terms}
    open_ = completion.open_terms(terms, read, k)
    if not open_ or not ranked or config.completion_cap == 0:
        return ranked, 0
    scores = {hit.record_id: hit.score for hit in ranked}
    chosen = completion.to_complete(scores, config.completion_cap)
    documents = {rid: index.analyzed(rid) for rid in completion.lacking(chosen, read, open_)}
    return (completion.complete(scores, terms, read, index.stats, dfs, documents, config),
            len(documents))


def exhaustive(terms: Sequence[str], index: Index, config: RankingConfig) -> Sequence[ScoredRecord]:
    """Every posting of every query term, exact df."""
    return score_postings(terms, {t: index.ordered.get(t, []) for t in terms}, index.stats,
                          config)


def overlap_at_10(ranked: Sequence[ScoredRecord], reference: Sequence[ScoredRecord]) -> float:
    """Share of the reference's top 10 found in the ranking's top 10."""
    ref = {h.record_id for h in reference[:10]}
    if not ref:
        return 1.0
    return len(ref & {h.record_id for h in ranked[:10]}) / len(ref)


def ndcg_vs_reference(ranked: Sequence[ScoredRecord], reference: Sequence[ScoredRecord]) -> float:
    """nDCG@10 with the reference ranking's scores as gains."""
    gain = {h.record_id: h.score for h in reference}
    dcg = sum(gain.get(h.record_id, 0.0) / math.log2(i + 2) for i, h in enumerate(ranked[:10]))
    ideal = sum(h.score / math.log2(i + 2) for i, h in enumerate(reference[:10]))
    return dcg / ideal if ideal > 0 else 1.0


def evaluate(index: Index, queries: dict[str, tuple[str, ...]], qrels: dict[str, dict[str, int]],
             config: RankingConfig, reference: dict[str, Sequence[ScoredRecord]]) -> dict[str, Any]:
    """The budget's rankings against the exhaustive ones, over every query."""
    overlaps, ndcgs, judged_b, judged_e, read, every = [], [], [], [], [], []
    done_overlap, done_ndcg, done_judged, done_read = [], [], [], []
    for qid, terms in queries.items():
        ranked = budgeted(terms, index, config)
        overlaps.append(overlap_at_10(ranked, reference[qid]))
        # The same candidates, each scored with every query term: is the loss in which
        # records are found, or in their scores?
        found = {h.record_id for h in ranked}
        every.append(overlap_at_10([h for h in reference[qid] if h.record_id in found],
                                   reference[qid]))
        ndcgs.append(ndcg_vs_reference(ranked, reference[qid]))
        gains = qrels.get(qid, {})
        judged_b.append(ndcg_linear_at([h.record_id for h in ranked], gains))
        judged_e.append(ndcg_linear_at([h.record_id for h in reference[qid]], gains))
        done, records_read = completed(terms, index, config, ranked)
        done_overlap.append(overlap_at_10(done, reference[qid]))
        done_ndcg.append(ndcg_vs_reference(done, reference[qid]))
        done_judged.append(ndcg_linear_at([h.record_id for h in done], gains))
        done_read.append(records_read)
        k = config.postings_for(len(terms))
        read.append(sum(min(k, len(index.ordered.get(t, []))) for t in terms))
    return {"overlap": statistics.mean(overlaps), "overlap_min": min(overlaps),
            "every": statistics.mean(every),
            "done_overlap": statistics.mean(done_overlap), "done_min": min(done_overlap),
            "done_ndcg": statistics.mean(done_ndcg), "done_judged": statistics.mean(done_judged),
            "done_read": statistics.mean(done_read), "done_read_max": max(done_read),
            "below_1": sum(1 for o in overlaps if o < 1.0), "ndcg": statistics.mean(ndcgs),
            "judged_b": statistics.mean(judged_b), "judged_e": statistics.mean(judged_e),
            "read": statistics.mean(read), "read_max": max(read)}


def main() -> None:
    """Build the index once per size, then compare each budget with exhaustive scoring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="50000", help="index sizes, comma-separated")
    parser.add_argument("--budgets", default=str(DEFAULT_CONFIG.postings_budget))
    parser.add_argument("--per-term", default=str(DEFAULT_CONFIG.postings_per_term),
                        help="K values, comma-separated")
    parser.add_argument("--completion-cap", default=str(DEFAULT_CONFIG.completion_cap),
                        help="completion caps C, comma-separated (0: the budget alone)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--queries", choices=("all", "odd", "even"), default="all",
                        help="Cranfield queries by id parity: choose parameters on one half, "
                             "report the other")
    parser.add_argument("--selection", choices=("blocks", "impact"), default="blocks",
                        help="a term's share as packed blocks return it, or the exact best "
                             "by impact (the layout before issue 33)")
    args = parser.parse_args()
    SELECTION[0] = args.selection
    collection = load_cranfield()
    title = titles()
    cranfield = [FieldDocument(d, {"primary": primary_text(title.get(d, ""), text),
                                   "context": text})
                 for d, text in collection.docs.items() if primary_text(title.get(d, ""), text)]
    queries = {q: query_terms(text) for q, text in collection.queries.items()
               if args.queries == "all" or int(q) % 2 == (args.queries == "odd")}
    vocabulary = {t for terms in queries.values() for t in terms}
    rows = []
    for size in sorted(int(s) for s in args.records.split(",")):
        filler = Filler(list(collection.docs.values()), args.seed)
        started = time.perf_counter()
        documents = cranfield + [filler.document(n) for n in range(size - len(cranfield))]
        index = build(documents, vocabulary)
        del documents
        built_s = time.perf_counter() - started
        reference = {q: exhaustive(terms, index, DEFAULT_CONFIG) for q, terms in queries.items()}
        dfs = sorted((len(index.ordered.get(t, [])) for t in vocabulary), reverse=True)
        # The fast path must be the service's function, exactly (impact selection).
        for qid in list(queries)[:5] if SELECTION[0] == "impact" else []:
            full = {t: index.ordered.get(t, []) for t in queries[qid]}
            assert impact.score_top_k(queries[qid], full, index.stats) == budgeted(
                queries[qid], index, DEFAULT_CONFIG)
        for k in (int(v) for v in args.per_term.split(",")):
            for b in (int(v) for v in args.budgets.split(",")):
                for cap in (int(v) for v in args.completion_cap.split(",")):
                    config = replace(DEFAULT_CONFIG, postings_per_term=k, postings_budget=b,
                                     completion_cap=cap)
                    r = evaluate(index, queries, collection.qrels, config, reference)
                    rows.append([index.stats.doc_count, k, b, cap, len(queries),
                                 f"{r['overlap']:.4f}", f"{r['ndcg']:.4f}",
                                 f"{r['done_overlap']:.4f}", f"{r['done_min']:.2f}",
                                 f"{r['done_ndcg']:.4f}", f"{r['every']:.4f}",
                                 f"{r['judged_e']:.4f}", f"{r['judged_b']:.4f}",
                                 f"{r['done_judged']:.4f}",
                                 f"{r['read']:.0f} / {r['read_max']}",
                                 f"{r['done_read']:.0f} / {r['done_read_max']}"])
                    print(f"... {size} records, K {k}, B {b}, C {cap}: overlap@10 budget "
                          f"{r['overlap']:.4f}, completed {r['done_overlap']:.4f}", flush=True)
        print(f"{size} records: built in {built_s:.0f} s; query terms' df: max {dfs[0]}, "
              f"median {dfs[len(dfs) // 2]}, above 1000: {sum(d > 1000 for d in dfs)} of "
              f"{len(dfs)}", flush=True)
    print(f"budget vs exhaustive BM25F, Cranfield planted in Zipf filler (seed "
          f"{args.seed}); {args.queries} queries; a term's share read as {SELECTION[0]}; "
          f"{machine()}")
    print(table(["records", "K per term", "budget B", "completion cap C", "queries",
                 "overlap@10 budget only", "nDCG@10 vs exh. budget only",
                 "overlap@10 completed", "min overlap@10 completed",
                 "nDCG@10 vs exh. completed", "overlap@10 if every candidate completed",
                 "Cranfield nDCG@10 exhaustive", "Cranfield nDCG@10 budget only",
                 "Cranfield nDCG@10 completed", "postings read/search (mean / max)",
                 "records completed/search (mean / max)"], rows))


if __name__ == "__main__":
    main()
