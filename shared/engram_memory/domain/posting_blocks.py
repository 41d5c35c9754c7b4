"""Packed posting blocks: many postings of one term in one binary value (docs/posting-blocks.md).

A term's postings are grouped by impact band (the impact code's place in [0, 10**9), in
``BANDS`` equal slices) and, within a band, into runs of record ids in the ids' own order.
A run starts at every record id that **starts a block** (``starts_block``: a fixed hash of
the id, one id in ``SPACING``) and holds the postings up to the next such id; the postings
before a band's first block-starting id form the band's head block. So the blocks of a term
are a function of its set of postings alone (``layout``), whatever order they were written
in, and hold ``SPACING`` postings on average however dense or sparse the band is: a
frequent term reads few, full items, a write rewrites a block of about the same size at
any df (docs/posting-blocks.md, "Block size").

Block keys (``{band:02d}#`` for a head, ``{band:02d}#{record_id}`` for a block started by
that record) sort band-major, then by record id, so a descending read of a term's blocks
meets its postings in the order of the old per-posting keys (impact code, then record id,
descending) up to the band: every block of a higher band holds only better postings, and
within a band the read follows record ids, exactly so for the many postings of one code (a
term every record has in the same field shape). A reader stops at a block boundary once it
holds enough, and sorts what it read (``best``).

A change to one record's posting touches the block holding it and, when that record starts
a block, the block before it (``change``: a block-starting posting splits its run off the
block it fell in; removing it merges its run back). Both are found by one descending read of
at most two keys from the record's own key down (``near_range``).

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
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from engram_memory.domain.ranking import FIELDS, Posting

__all__ = [
    "BANDS",
    "CODE_LIMIT",
    "COMPACT_NARROW_FORMAT",
    "SPACING",
    "BlockChange",
    "BlockPosting",
    "band_of",
    "best",
    "change",
    "compact_id_text",
    "decode",
    "encode",
    "fewest_blocks",
    "head_key",
    "is_compact_narrow",
    "layout",
    "near_range",
    "posting_count",
    "starts_block",
]

BANDS = 32
"""Impact bands per term (a read stops at a band boundary)."""
SPACING = 8
"""One record id in SPACING starts a block: the mean postings per block (chosen from the
read and write costs, docs/posting-blocks.md)."""
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
_COMPACT_NARROW = struct.Struct(f"<x{_ID_BYTES}s" + _NARROW.format[1:])
"""A whole posting whose header says compact id, narrow numbers: header, id, numbers."""
COMPACT_NARROW_FORMAT = _COMPACT_NARROW.format
"""The ``struct`` format of such a posting (``is_compact_narrow`` blocks are runs of it)."""
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"  # RFC 4648's alphabet, lower case
_PAIRS = [_BASE32[n >> 5] + _BASE32[n & 31] for n in range(1024)]
_PAIR_SHIFTS = tuple(range(250, -1, -10))  # 256 id bits + 4 zero bits = 26 pairs of chars
_KNOWN_IDS: dict[bytes, str] = {}
_KNOWN_IDS_LIMIT = 1 << 17
"""Compact ids decoded by this process, kept (up to ~25 MB) because the same records come
back in search after search: decoding one is most of a posting's decode time."""


@dataclass(frozen=True, slots=True)
class BlockPosting:
    """A posting with the impact code it is ordered by."""

    code: int
    posting: Posting


def band_of(code: int) -> int:
    """The impact band of an impact code (0 = lowest)."""
    return min(BANDS - 1, max(0, code) * BANDS // CODE_LIMIT)


def starts_block(record_id: str) -> bool:
    """Whether the record's postings start a block in every band they are in (a fixed
    hash of the id: the same answer in every process and release of this layout)."""
    return zlib.crc32(record_id.encode("utf-8")) % SPACING == 0


def head_key(band: int) -> str:
    """The sort key of a band's head block (its postings before the first block start)."""
    return f"{band:02d}#"


def _start_key(band: int, record_id: str) -> str:
    return f"{band:02d}#{record_id}"


def near_range(code: int, record_id: str) -> tuple[str, str]:
    """The key range ``[low, high]`` whose two highest existing keys are the blocks a change
    of this posting may touch: the block holding the record's posting, and the one before."""
    band = band_of(code)
    return head_key(band), _start_key(band, record_id)


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


def compact_id_text(raw: bytes) -> str:
    """``mem_`` + the lower-case unpadded base32 of 32 raw id bytes (what ``_compact_id``
    inverts), by ten-bit pairs of characters; remembered per process."""
    found = _KNOWN_IDS.get(raw)
    if found is None:
        if len(_KNOWN_IDS) >= _KNOWN_IDS_LIMIT:
            _KNOWN_IDS.clear()
        bits = int.from_bytes(raw, "big") << 4
        found = _ID_PREFIX + "".join([_PAIRS[(bits >> shift) & 1023] for shift in _PAIR_SHIFTS])
        _KNOWN_IDS[raw] = found
    return found


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


def is_compact_narrow(data: bytes) -> bool:
    """Whether every posting of ``data`` is a compact id with narrow numbers (nearly every
    block): then postings are fixed-size records, each starting with header 127. Exact: a
    first header of 127 fixes the first posting's size, so the next header sits at the next
    multiple, and so on."""
    postings = len(data) // _COMPACT_NARROW.size
    return postings * _COMPACT_NARROW.size == len(data) and data[::_COMPACT_NARROW.size] == bytes(
        [_COMPACT_ID]) * postings


def posting_count(data: bytes) -> int:
    """How many postings a block holds."""
    return len(data) // _COMPACT_NARROW.size if is_compact_narrow(data) else len(decode(data))


def decode(data: bytes) -> list[BlockPosting]:
    """The postings of a block, in its stored (canonical) order."""
    if is_compact_narrow(data):
        # Every posting a compact id with narrow numbers (nearly every block): one
        # fixed-size record each, unpacked in C.
        return [BlockPosting(n[1], Posting(compact_id_text(n[0]), n[2:2 + _FIELDS],
                                           n[2 + _FIELDS:]))
                for n in _COMPACT_NARROW.iter_unpack(data)]
    found: list[BlockPosting] = []
    view = memoryview(data)
    at = 0
    while at < len(view):
        header = view[at]
        at += 1
        size = header & 0x7F
        if size == _COMPACT_ID:
            record_id = compact_id_text(bytes(view[at:at + _ID_BYTES]))
            at += _ID_BYTES
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


def best(entries: Iterable[BlockPosting], limit: int) -> list[Posting]:
    """The ``limit`` best postings, in the order of the old per-posting keys (impact code,
    then record id, descending)."""
    ordered = sorted(entries, key=_order, reverse=True)
    return [entry.posting for entry in ordered[:limit]]


def layout(entries: Iterable[BlockPosting]) -> dict[str, bytes]:
    """The blocks (sort key → bytes) a term with these postings has: every band with a
    posting has its head block (empty bytes when no posting precedes the band's first
    block start) and one block per block-starting record. The stored state after any
    sequence of changes that leaves exactly these postings is this, plus an empty head
    for each band that once had postings and has none left (``change`` never deletes a
    head: see there)."""
    by_record = {entry.posting.record_id: entry for entry in entries}
    runs: dict[str, list[BlockPosting]] = {}
    last_band, key = -1, ""
    for record_id, entry in sorted(by_record.items(), key=lambda kv: (band_of(kv[1].code),
                                                                      kv[0])):
        band = band_of(entry.code)
        if band != last_band:
            last_band, key = band, head_key(band)
            runs[key] = []
        if starts_block(record_id):
            key = _start_key(band, record_id)
        runs.setdefault(key, []).append(entry)
    return {key: encode(run) for key, run in runs.items()}


@dataclass(frozen=True, slots=True)
class BlockChange:
    """What one posting change does to its blocks: per sort key the bytes before (None:
    no such block) and after (None: delete it; a write of unchanged bytes still counts:
    it tells concurrent writers of that block that its neighbourhood changed), and whether
    the record's posting was there before and is there after (df moves by the difference)."""

    writes: dict[str, tuple[bytes | None, bytes | None]]
    had: bool
    has: bool


def change(code: int, record_id: str, entry: BlockPosting | None,
           near: list[tuple[str, bytes]]) -> BlockChange:
    """Put ``entry`` (the record's posting, impact ``code``) or, when None, remove the
    record's posting from band ``band_of(code)``.

    ``near``: the stored blocks with the two highest keys in ``near_range(code,
    record_id)``, highest first (fewer when there are fewer). The result keeps the layout
    rule: a block-starting record that arrives splits its run off the block it falls in; one
    that leaves merges its run back into the block before.

    Concurrency: a plan is valid while the block it read as the record's (its *cover*)
    is unchanged and no block appears between the cover and the record. A block only
    appears by a split of the block that covered its key then, and a split always writes
    that block (even when its bytes stay the same) — so a writer conditioning every write
    on the version it read of each block it writes (``posting_writer``) fails and re-plans
    whenever another writer made its plan stale. For that, a band always has a block
    below every other (its head: written, empty if need be, by the first change of the
    band, never deleted), so every block has a cover to conflict on.
    """
    band = band_of(code)
    own = _start_key(band, record_id)
    head = head_key(band)
    old = dict(near)
    cover = near[0] if near else None
    held = decode(cover[1]) if cover else []
    had = any(e.posting.record_id == record_id for e in held)
    others = [e for e in held if e.posting.record_id != record_id]
    new: dict[str, bytes | None] = {}
    touched: set[str] = set()  # written even if unchanged: the neighbourhood changed
    if entry is not None and (not starts_block(record_id) or (cover and cover[0] == own)):
        new[cover[0] if cover else head] = encode([*others, entry])
    elif entry is not None:  # a block starts here: split the run from the record on
        below = cover[0] if cover else head
        new[below] = encode(e for e in others if e.posting.record_id < record_id)
        touched.add(below)
        new[own] = encode([*(e for e in others if e.posting.record_id > record_id), entry])
    elif cover and cover[0] == own:  # the record's own block goes: merge it into the one before
        before = near[1] if len(near) > 1 else None
        target = before[0] if before else head
        new[own] = None
        new[target] = encode([*(decode(before[1]) if before else []), *others])
        touched.add(target)
    elif had and cover:
        new[cover[0]] = encode(others)
    writes = {key: (old.get(key), data) for key, data in new.items()
              if key in touched or data != old.get(key)}
    return BlockChange(writes, had, entry is not None)


def fewest_blocks(entries: Iterable[BlockPosting], limit: int) -> list[Posting]:
    """The ``limit`` postings a read of the fewest whole blocks returns: blocks in descending
    key order until they hold ``limit`` postings, the best of them. A store may read more
    blocks (its pages), never fewer, so this is the least a search sees (offline quality
    measurements use it: bench/budget_quality.py)."""
    blocks = layout(entries)
    read: list[BlockPosting] = []
    for key in sorted(blocks, reverse=True):
        if len(read) >= limit:
            break
        read.extend(decode(blocks[key]))
    return best(read, limit)
