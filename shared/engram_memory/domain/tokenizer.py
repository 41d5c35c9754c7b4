"""The lexical tokenizer shared by the projector (indexing) and search (querying).

Rule (docs/search.md): NFKC-normalize, casefold, split on Unicode word characters
(letters and digits; ``_`` and punctuation separate words), drop a small English stopword
list, and cut every term to :data:`MAX_TERM_CHARS` characters. No stemming: on Cranfield a
light plural stemmer did not pay for the recall noise it adds (see docs/search.md).
Both sides of the index use this one function, so a term is always spelled the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

TOKENIZER_VERSION = "1"
MAX_TERM_CHARS = 64
"""Longer words (hashes, blobs) are cut so a term always fits a storage key."""

MAX_QUERY_TERMS = 64
"""A query uses at most this many distinct terms (first occurrences), bounding its cost."""

_WORD = re.compile(r"[^\W_]+")

_STOPWORD_TEXT = """
    a an and are as at be been but by can could did do does for from had has have he her
    his how i if in into is it its itself me my no nor not of on or our out she so such
    than that the their them then there these they this those to too us was we were what
    when where which while who whom why will with would you your
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str) -> list[str]:
    """The ordered terms of ``text`` (duplicates kept, stopwords removed)."""
    normalized = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    for word in _WORD.findall(normalized):
        if word in STOPWORDS:
            continue
        terms.append(word[:MAX_TERM_CHARS])
    return terms


def term_frequencies(text: str) -> Counter[str]:
    """Term → number of occurrences in ``text``."""
    return Counter(tokenize(text))


def query_terms(query: str) -> tuple[str, ...]:
    """The distinct terms of a query in first-occurrence order, at most MAX_QUERY_TERMS."""
    seen: dict[str, None] = {}
    for term in tokenize(query):
        if term not in seen:
            seen[term] = None
            if len(seen) == MAX_QUERY_TERMS:
                break
    return tuple(seen)
