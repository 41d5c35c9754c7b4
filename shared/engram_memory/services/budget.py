"""Packet budgets: every packet is measured as its RFC 8785 canonical JSON bytes.

The rule (docs/search.md, "Budgets"), with B = ``max_packet_bytes``:

* get: the whole value (record, redacted_fields, receipts, packet_digest) must be ≤ B,
  else PROJECTION_OVERSIZED, which a larger B cures: capture admits no record whose packet
  exceeds the largest B (domain/packet_bound.py). A record stored before that bound, too
  large for any B, is delivered with its largest fields redacted (:func:`fit_record`).
* search: one oversized record never fails a page. A packet that cannot fit a page on its
  own (B minus the value around one packet) is delivered with its largest record fields
  redacted, listed in ``redacted_fields`` (:func:`fit_record`); ``get`` with a larger B
  reads it whole. Then the page keeps the longest prefix of its packets whose complete
  value (packets + rank_receipt + next_page_cursor when more remain + response_digest) is
  ≤ B; the records cut off are reached through ``next_page_cursor``. PROJECTION_OVERSIZED
  and RESULT_TOO_LARGE remain only for a budget too small for a packet of ``record_id``
  alone, which B ≥ 4,096 never is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.errors import ProjectionOversized, ResultTooLarge


def size_of(value: Mapping[str, Any]) -> int:
    """Canonical JSON byte length of a JSON object."""
    return len(canonical_json(dict(value)))


def fit_record(redact: Callable[[frozenset[str]], dict[str, Any]], room: int) -> dict[str, Any]:
    """``redact(withheld)`` with the fewest record fields withheld for it to be ≤ ``room``.

    ``redact`` builds the packet (or value) with the given record fields left out. Fields
    are withheld largest first (canonical bytes; ties by name) until it fits; ``record_id``
    always stays. PROJECTION_OVERSIZED if even ``record_id`` alone does not fit.
    """
    packet = redact(frozenset())
    if size_of(packet) <= room:
        return packet
    record: Mapping[str, Any] = packet["record"]
    order = sorted((f for f in record if f != "record_id"),
                   key=lambda f: (-len(canonical_json(record[f])), f))
    withheld: set[str] = set()
    for field in order:
        withheld.add(field)
        packet = redact(frozenset(withheld))
        if size_of(packet) <= room:
            return packet
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
