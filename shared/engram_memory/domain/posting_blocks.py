"""Packed posting blocks: many postings of one term in one binary value (layout: docs/search.md).

A term's postings are grouped by impact band (the impact code's place in [0, 10**9), in
``BANDS`` equal slices) and, within a band, by the record id's leading characters
(``SHARDS`` ranges, in the ids' own order), so a record's posting of a term always lives in
exactly one block (``block_key``). Block keys sort band-major, then by record id, so a
descending read of a term's blocks meets its postings in the order of the old per-posting
keys (impact code, then record id, descending) up to the band: every block of a higher band
holds only better postings, and within a band the read follows record ids, exactly so for
the many postings of one code (a term every record has in the same field shape). A reader
stops at a block boundary once it holds enough, and sorts what it read (``best``).
Sharding keeps blocks of a dense band small enough to rewrite cheaply and far below
DynamoDB's item limit (docs/search.md, "Posting blocks").

Inside a block the postings are in canonical order (impact code, then record id, both
descending: the order the old per-posting sort keys had), so the same set of postings is
always the same bytes: a replayed or reordered write leaves identical blocks. Encoding, per
posting: one header byte (bit 7: wide numbers; low 7 bits: 127 = a ``mem_`` id stored as its
32 raw bytes, 126 = a 2-byte length follows, else the id's UTF-8 length), the id, then the
numbers: impact code (uint32) and the per-field term frequencies and field lengths, uint8
and uint16 each (narrow), or uint32 each (wide) when one does not fit. Standard library only:
decoding is ``struct`` slices, no per-attribute parsing.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from engram_memory.domain.ranking import FIELDS, Posting

__all__ = ["BANDS", "CODE_LIMIT", "SHARDS", "BlockPosting", "band_of", "best", "block_key",
           "decode", "encode", "fewest_blocks", "shard_of", "with_posting",
           "without_record"]

BANDS = 32
"""Impact bands per term (a read stops at a band boundary)."""
SHARDS = 1024
"""Blocks per band at most: record-id ranges of two id characters (chosen from the write
cost, docs/posting-blocks.md)."""
CODE_LIMIT = 1_000_000_000
"""Impact codes are in [0, CODE_LIMIT) (domain/impact.py)."""

_FIELDS = len(FIELDS)
_NARROW = struct.Struct(f"<I{_FIELDS}B{_FIELDS}H")
_WIDE = struct.Struct(f"<I{2 * _FIELDS}I")
_WIDE_FLAG = 0x80
_COMPACT_ID = 127
_LONG_ID = 126
_ID_PREFIX = "mem_"
_ID_BYTES = 32
_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"  # base32's id characters, in string order


@dataclass(frozen=True, slots=True)
class BlockPosting:
    """A posting with the impact code it is ordered by."""

    code: int
    posting: Posting


def band_of(code: int) -> int:
    """The impact band of an impact code (0 = lowest)."""
    return min(BANDS - 1, max(0, code) * BANDS // CODE_LIMIT)


def _rank(char: str) -> int:
    """A character's place among the base32 id characters (monotone in string order)."""
    return min(len(_ALPHABET) - 1, bisect.bisect_left(_ALPHABET, char))


def shard_of(record_id: str) -> int:
    """The record-id range of a record within a band: its first two id characters, in
    string order (ids sorting later never get a lower shard)."""
    body = record_id.removeprefix(_ID_PREFIX)
    first = _rank(body[0]) if body else 0
    second = _rank(body[1]) if len(body) > 1 else 0
    return (first * len(_ALPHABET) + second) * SHARDS // len(_ALPHABET) ** 2


def block_key(code: int, record_id: str) -> str:
    """The sort key of the block holding this posting: ``{band:02d}#{shard:04d}``."""
    return f"{band_of(code):02d}#{shard_of(record_id):04d}"


def _order(entry: BlockPosting) -> tuple[int, str]:
    return entry.code, entry.posting.record_id


def _compact_id(record_id: str) -> bytes | None:
    """The 32 raw bytes of a ``mem_`` + base32 id, if that round-trips exactly."""
    body = record_id[len(_ID_PREFIX):]
    if not record_id.startswith(_ID_PREFIX) or len(body) != 52:
        return None
    try:
        raw = base64.b32decode(body.upper() + "====")
    except (binascii.Error, ValueError):
        return None
    if base64.b32encode(raw).decode("ascii").rstrip("=").lower() != body:
        return None
    return raw if len(raw) == _ID_BYTES else None


def _encode_one(entry: BlockPosting) -> bytes:
    posting = entry.posting
    if not 0 <= entry.code < CODE_LIMIT:
        raise ValueError("impact code out of range")
    if len(posting.tf) != _FIELDS or len(posting.lengths) != _FIELDS:
        raise ValueError("a posting has one frequency and one length per field")
    numbers = (entry.code, *posting.tf, *posting.lengths)
    narrow = all(0 <= t < 256 for t in posting.tf) and all(
        0 <= n < 65536 for n in posting.lengths)
    packed = _NARROW.pack(*numbers) if narrow else _WIDE.pack(*numbers)
    flag = 0 if narrow else _WIDE_FLAG
    compact = _compact_id(posting.record_id)
    if compact is not None:
        return bytes([flag | _COMPACT_ID]) + compact + packed
    raw_id = posting.record_id.encode("utf-8")
    if len(raw_id) < _LONG_ID:
        return bytes([flag | len(raw_id)]) + raw_id + packed
    return bytes([flag | _LONG_ID]) + struct.pack("<H", len(raw_id)) + raw_id + packed


def encode(entries: Iterable[BlockPosting]) -> bytes:
    """The block's bytes: its postings in canonical order (one per record id)."""
    by_record = {entry.posting.record_id: entry for entry in entries}
    ordered = sorted(by_record.values(), key=_order, reverse=True)
    return b"".join(_encode_one(entry) for entry in ordered)


def decode(data: bytes) -> list[BlockPosting]:
    """The postings of a block, in its stored (canonical) order."""
    found: list[BlockPosting] = []
    view = memoryview(data)
    at = 0
    while at < len(view):
        header = view[at]
        at += 1
        size = header & 0x7F
        if size == _COMPACT_ID:
            raw = bytes(view[at:at + _ID_BYTES])
            at += _ID_BYTES
            record_id = _ID_PREFIX + base64.b32encode(raw).decode("ascii").rstrip("=").lower()
        else:
            if size == _LONG_ID:
                (size,) = struct.unpack_from("<H", view, at)
                at += 2
            record_id = bytes(view[at:at + size]).decode("utf-8")
            at += size
        layout = _WIDE if header & _WIDE_FLAG else _NARROW
        numbers = layout.unpack_from(view, at)
        at += layout.size
        found.append(BlockPosting(numbers[0], Posting(
            record_id, tuple(numbers[1:1 + _FIELDS]), tuple(numbers[1 + _FIELDS:]))))
    return found


def with_posting(data: bytes | None, entry: BlockPosting) -> bytes:
    """The block with ``entry`` in it (replacing the record's earlier posting, if any)."""
    return encode([*(decode(data) if data else []), entry])


def without_record(data: bytes | None, record_id: str) -> bytes:
    """The block without the record's posting (empty bytes when nothing is left)."""
    kept = [e for e in (decode(data) if data else []) if e.posting.record_id != record_id]
    return encode(kept)


def best(entries: Iterable[BlockPosting], limit: int) -> list[Posting]:
    """The ``limit`` best postings, in the order of the old per-posting keys (impact code,
    then record id, descending)."""
    ordered = sorted(entries, key=_order, reverse=True)
    return [entry.posting for entry in ordered[:limit]]


def fewest_blocks(entries: Iterable[BlockPosting], limit: int) -> list[Posting]:
    """The ``limit`` postings a read of the fewest whole blocks returns: blocks in descending
    key order until they hold ``limit`` postings, the best of them. A store may read more
    blocks (its pages), never fewer, so this is the least a search sees (offline quality
    measurements use it: bench/budget_quality.py)."""
    blocks: dict[str, list[BlockPosting]] = {}
    for entry in entries:
        blocks.setdefault(block_key(entry.code, entry.posting.record_id), []).append(entry)
    read: list[BlockPosting] = []
    for key in sorted(blocks, reverse=True):
        if len(read) >= limit:
            break
        read.extend(blocks[key])
    return best(read, limit)
