"""The rankers bench/ranking_quality.py prints beside our search: bm25s and the previous release.

All three rank the text the service was given (title as the primary component, abstract as
a context component, the bench's citation) and return the top 100 document ids per query,
keeping, like our search, only documents that match a query term.

* ``bm25s plain``: BM25 (bm25s defaults), no stopwords, no stemming.
* ``bm25s + stopwords + stems``: bm25s' English stopwords and the Snowball English stemmer
  our tokenizer uses (``snowballstemmer.english_stemmer.EnglishStemmer``).
* ``previous release``: our BM25F as it shipped before tokenizer 2 (no stemming, k1 = 1.2,
  up to 64 query terms), scored directly over every posting (no service, no MCP). At K =
  1000 postings per term the service scores the same candidates on Cranfield (max df 702).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import bm25s
from engram_memory.domain import ranking, tokenizer
from engram_memory.domain.search_fields import record_document
from snowballstemmer.english_stemmer import EnglishStemmer

Rankings = dict[str, list[str]]
TOP = 100


def bm25s_rankings(texts: Mapping[str, str], queries: Mapping[str, str], stopwords: str | None,
                   stemmer: Callable[[list[str]], list[str]] | None) -> Rankings:
    """Top 100 per query from bm25s with the given stopwords and stemmer."""
    ids = list(texts)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([texts[d] for d in ids], stopwords=stopwords,
                                   stemmer=stemmer, show_progress=False), show_progress=False)
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords=stopwords, stemmer=stemmer,
                            show_progress=False)
    results, found = retriever.retrieve(tokens, k=min(TOP, len(ids)), show_progress=False)
    return {q: [ids[i] for i, score in zip(results[n], found[n], strict=True) if score > 0]
            for n, q in enumerate(qids)}


def bm25s_plain(texts: Mapping[str, str], queries: Mapping[str, str]) -> Rankings:
    """bm25s with no stopword list and no stemming."""
    return bm25s_rankings(texts, queries, None, None)


def bm25s_stemmed(texts: Mapping[str, str], queries: Mapping[str, str]) -> Rankings:
    """bm25s with English stopwords and our tokenizer's Snowball English stemmer."""
    return bm25s_rankings(texts, queries, "en", EnglishStemmer().stemWords)


@contextmanager
def tokenizer_1() -> Iterator[None]:
    """Our tokenizer as it was at version 1: no stemming (long words cut), 64 query terms."""
    saved = tokenizer.stem, tokenizer.MAX_QUERY_TERMS
    tokenizer.stem = lambda word: word[:tokenizer.MAX_TERM_CHARS]  # type: ignore[assignment]
    tokenizer.MAX_QUERY_TERMS = 64
    try:
        yield
    finally:
        tokenizer.stem, tokenizer.MAX_QUERY_TERMS = saved


def previous_release(payloads: Mapping[str, Mapping[str, Any]],
                     queries: Mapping[str, str]) -> Rankings:
    """BM25F with tokenizer 1 and k1 = 1.2 over the captured payloads, every posting scored."""
    config = dataclasses.replace(ranking.DEFAULT_CONFIG, k1=1.2)
    with tokenizer_1():
        postings, stats = ranking.build_index(
            record_document(doc_id, payload) for doc_id, payload in payloads.items())
        return {q: [hit.record_id for hit in ranking.score_postings(
                    tokenizer.query_terms(text), postings, stats, config)[:TOP]]
                for q, text in queries.items()}
