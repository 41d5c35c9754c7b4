"""The lexical tokenizer shared by the projector (indexing) and search (querying).

Rule (docs/search.md): NFKC-normalize, casefold, split on Unicode word characters
(letters and digits; ``_`` and punctuation separate words), drop a small English stopword
list, reduce every word to its Snowball English stem, and cut every term to
:data:`MAX_TERM_CHARS` characters. Both sides of the index use this one function, so a term
is always spelled the same way; changing any step changes :data:`TOKENIZER_VERSION`, which
names a new projection generation (``ranking.PROJECTION_GENERATION``) that is rebuilt from canonical
state instead of being mixed with the old one.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from functools import lru_cache

from snowballstemmer.english_stemmer import EnglishStemmer

TOKENIZER_VERSION = "2"
"""1: no stemming. 2: Snowball English stems (docs/search.md has the measurement)."""
MAX_TERM_CHARS = 64
"""Longer words (hashes, blobs) are cut so a term always fits a storage key."""

MAX_QUERY_TERMS = 32
"""A query uses at most this many distinct terms (first occurrences), bounding its cost.

32 by measurement (docs/search.md): no Cranfield query has more than 26 terms after
stopwords; a cap of 16 cuts 16 of the 225 queries and loses nDCG@10, 8 loses a lot."""

_WORD = re.compile(r"[^\W_]+")

_STOPWORD_TEXT = """
    a an and are as at be been but by can could did do does for from had has have he her
    his how i if in into is it its itself me my no nor not of on or our out she so such
    than that the their them then there these they this those to too us was we were what
    when where which while who whom why will with would you your
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

# The pure-Python Snowball implementation is used directly (not through
# ``snowballstemmer.stemmer``, which switches to PyStemmer when that happens to be
# installed), so every environment stems with the very same code.
_STEMMER = EnglishStemmer()
# The stemmer object keeps the word being stemmed in its own fields, so two threads
# stemming at once corrupt each other (IndexError, or a wrong stem indexed for good). The
# projector, search's pools and the local service tokenize on several threads.
_STEMMER_LOCK = threading.Lock()


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The Snowball English stem of one casefolded word (cached: words repeat a lot)."""
    if len(word) > MAX_TERM_CHARS:
        return word[:MAX_TERM_CHARS]  # a hash or a blob: nothing to stem, cut it
    with _STEMMER_LOCK:
        stemmed: str = _STEMMER.stemWord(word)
    return stemmed


def tokenize(text: str) -> list[str]:
    """The ordered terms of ``text`` (duplicates kept, stopwords removed, stemmed)."""
    normalized = unicodedata.normalize("NFKC", text).casefold()
    return [stem(word) for word in _WORD.findall(normalized) if word not in STOPWORDS]


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
