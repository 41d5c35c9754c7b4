"""Cranfield loading and the IR measures used by bench/ranking_quality.py.

nDCG@k uses the graded gains of qrels.tsv (4 = complete answer ... 1 = minimum interest)
with the exponential gain 2^g - 1 (or the linear gain g) and log2(rank + 1) discount;
Recall@k counts every listed pair as relevant (binary), as the collection's SOURCE.md prescribes.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reference_data import reference_data

DEFAULT_DIR = reference_data() / "cranfield"


@dataclass(frozen=True)
class Collection:
    """Documents, queries and graded judgements of one test collection."""

    docs: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_cranfield(folder: Path = DEFAULT_DIR) -> Collection:
    """Read corpus.jsonl, queries.jsonl and qrels.tsv."""
    docs: dict[str, str] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs[row["_id"]] = row["text"]
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            queries[row["_id"]] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return Collection(docs, queries, qrels)


def ndcg_at(ranked: Sequence[str], gains: Mapping[str, int], k: int = 10,
            linear: bool = False) -> float:
    """Normalised discounted cumulative gain at rank k (gain 2^g - 1, or g when ``linear``)."""
    def gain(grade: int) -> float:
        return float(grade) if linear else float(2**grade - 1)

    dcg = sum(gain(gains.get(doc, 0)) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def ndcg_linear_at(ranked: Sequence[str], gains: Mapping[str, int], k: int = 10) -> float:
    """nDCG at rank k with linear gains (gain = the grade itself)."""
    dcg = sum(gains.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], gains: Mapping[str, int], k: int = 100) -> float:
    """Fraction of the judged-relevant documents found in the top k."""
    if not gains:
        return 0.0
    return len(set(ranked[:k]) & set(gains)) / len(gains)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (0.0 for no values)."""
    return sum(values) / len(values) if values else 0.0


def titles(folder: Path = DEFAULT_DIR) -> dict[str, str]:
    """Each document's title (corpus.jsonl's ``title``; empty for some)."""
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        return {row["_id"]: row.get("title", "") for row in map(json.loads, fh)}


def primary_text(title: str, text: str) -> str:
    """What the benches send as a document's primary component: its title, or the
    abstract's first 200 characters when it has none (empty when both are)."""
    return title.strip() or text[:200]
