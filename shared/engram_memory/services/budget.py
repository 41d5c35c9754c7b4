"""Packet budgets: every packet is measured as its RFC 8785 canonical JSON bytes.

The rule (docs/search.md, "Budgets"), with B = ``max_packet_bytes``:

* get: the whole value (record, redacted_fields, receipts, packet_digest) must be ≤ B,
  else PROJECTION_OVERSIZED.
* search: the page's first record packet alone > B → PROJECTION_OVERSIZED (that record can
  never be delivered under B). Otherwise the page keeps the longest prefix of its packets
  whose complete value (packets + rank_receipt + next_page_cursor when more remain +
  response_digest) is ≤ B; if fewer than the page's records fit, the rest is reached
  through ``next_page_cursor``. If not even the first packet fits once the value around it
  is counted, → RESULT_TOO_LARGE (limit = 1 would give the same value, so reducing limit
  cannot help; only a larger B can).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.errors import ProjectionOversized, ResultTooLarge


def size_of(value: Mapping[str, Any]) -> int:
    """Canonical JSON byte length of a JSON object."""
    return len(canonical_json(dict(value)))


def check_single(value: Mapping[str, Any], max_bytes: int) -> None:
    """A single-record value over budget is PROJECTION_OVERSIZED."""
    if size_of(value) > max_bytes:
        raise ProjectionOversized


def fit_prefix(
    packets: Sequence[Mapping[str, Any]],
    skeleton: Callable[[int], dict[str, Any]],
    build: Callable[[int], dict[str, Any]],
    max_bytes: int,
) -> tuple[int, dict[str, Any]]:
    """The largest k ≥ 1 whose value ``build(k)`` fits, and that value.

    ``skeleton(k)`` is the value for k packets with ``records`` empty and digests that
    depend on the packets replaced by same-length placeholders; since a canonical array is
    its elements joined by commas, size(build(k)) = size(skeleton(k)) + Σ sizes[:k] + k − 1.
    The chosen value is built and measured once more to confirm.
    """
    if not packets:
        return 0, build(0)
    sizes = [size_of(p) for p in packets]
    if sizes[0] > max_bytes:
        raise ProjectionOversized
    for k in range(len(packets), 0, -1):
        if size_of(skeleton(k)) + sum(sizes[:k]) + (k - 1) <= max_bytes:
            value = build(k)
            if size_of(value) <= max_bytes:
                return k, value
    raise ResultTooLarge
