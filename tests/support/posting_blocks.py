"""Read the postings a projection table holds, through its packed blocks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engram_memory.adapters.dynamodb.posting_writer import block_bytes
from engram_memory.domain.posting_blocks import decode


def postings_by_term(items: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Record ids of every posting in the scanned ``POST#`` block items, by term."""
    found: dict[str, list[str]] = {}
    for item in items:
        if item["pk"]["S"].startswith("POST#"):
            term = item["pk"]["S"].rsplit("#", 1)[1]
            held = [entry.posting.record_id for entry in decode(block_bytes(item))]
            if held:  # an empty head block holds nothing
                found.setdefault(term, []).extend(held)
    return found
