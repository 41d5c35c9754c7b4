"""The previous projection generation, read-only, for searches during a rebuild.

Generation ``t2i2b1`` (the release before hashed-run blocks) has the same tokenizer and
impact codes as the current one and differs only in where a block's record ids end: its
blocks are fixed record-id ranges (sort key ``{band:02d}#{range:04d}``). Its keys sort band
first, then record id, as the current ones do, so the same reader serves it
(``DynamoProjectionStore`` of that generation). While a scope's current generation is being
rebuilt (its watermark too far behind the journal head), a search is answered from this
generation plus the journal tail (docs/reindex.md, "Serving during a rebuild"). Nothing
writes it any more; ``engram-memory reindex --drop-stale`` deletes it.
"""

from __future__ import annotations

from engram_memory.domain.ranking import IMPACT_VERSION
from engram_memory.domain.tokenizer import TOKENIZER_VERSION

PREVIOUS_GENERATION = "t2i2b1"
"""Served during a rebuild only while it shares the tokenizer and impact key (else None)."""


def previous_generation() -> str | None:
    """The generation a search may fall back to, if the current code can read it."""
    same_terms = f"t{TOKENIZER_VERSION}i{IMPACT_VERSION}" == PREVIOUS_GENERATION[:4]
    return PREVIOUS_GENERATION if same_terms else None
