"""A term's read postings as columns: scored without a Python object per posting.

A search reads up to ``postings_budget`` postings (12,000) and scores every one; decoding
each into a ``Posting`` and scoring it field by field in Python cost ≈ 5 µs a posting
(docs/performance.md, "Search at scale"). :class:`PostingColumns` keeps a term's postings as
arrays (impact codes, per-field term frequencies, field lengths) beside their record ids,
and computes BM25F's per-posting gains with array arithmetic.

It is still a ``Sequence[Posting]`` (a posting is built only when one is asked for), so
code that walks postings one by one keeps working, and its gains are **bit for bit** the
gains :func:`~engram_memory.domain.ranking.score_map` computes one posting at a time: the
same IEEE operations in the same order (tested against it, property-based).
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

import numpy as np

from engram_memory.domain.posting_blocks import (
    COMPACT_NARROW_FORMAT,
    decode,
    is_compact_narrow,
)
from engram_memory.domain.ranking import FIELDS, Posting

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from engram_memory.domain.ranking import RankingConfig

__all__ = ["PostingColumns", "decode_columns"]

_FIELDS = len(FIELDS)
_ID_BYTES = 32
_COMPACT_NARROW = np.dtype([("header", "u1"), ("id", f"V{_ID_BYTES}"), ("code", "<u4"),
                            ("tf", "u1", (_FIELDS,)), ("lengths", "<u2", (_FIELDS,))])
"""``posting_blocks.COMPACT_NARROW_FORMAT`` as a numpy record (checked equal on import)."""
if _COMPACT_NARROW.itemsize != struct.calcsize(COMPACT_NARROW_FORMAT):
    raise ImportError("posting_columns does not match the posting layout of posting_blocks")


class PostingColumns(Sequence[Posting]):
    """Postings of one term: ``record_ids[i]`` has impact code ``codes[i]``, per-field term
    frequencies ``tf[i]`` and field lengths ``lengths[i]``."""

    __slots__ = ("codes", "lengths", "record_ids", "tf")

    def __init__(self, record_ids: Sequence[str], codes: NDArray[np.int64],
                 tf: NDArray[np.int64], lengths: NDArray[np.int64]) -> None:
        if not len(record_ids) == len(codes) == len(tf) == len(lengths):
            raise ValueError("one code, one frequency row and one length row per record id")
        self.record_ids = list(record_ids)
        self.codes = codes
        self.tf = tf.reshape(len(record_ids), _FIELDS)
        self.lengths = lengths.reshape(len(record_ids), _FIELDS)

    @classmethod
    def of(cls, coded: Iterable[tuple[int, Posting]]) -> PostingColumns:
        """Columns of ``(impact code, posting)`` pairs, in the given order."""
        pairs = list(coded)
        return cls([p.record_id for _, p in pairs],
                   np.array([code for code, _ in pairs], dtype=np.int64),
                   np.array([p.tf for _, p in pairs], dtype=np.int64).reshape(-1, _FIELDS),
                   np.array([p.lengths for _, p in pairs], dtype=np.int64).reshape(-1, _FIELDS))

    def __len__(self) -> int:
        return len(self.record_ids)

    @overload
    def __getitem__(self, index: int) -> Posting: ...

    @overload
    def __getitem__(self, index: slice) -> PostingColumns: ...

    def __getitem__(self, index: int | slice) -> Posting | PostingColumns:
        if isinstance(index, slice):
            return PostingColumns(self.record_ids[index], self.codes[index], self.tf[index],
                                  self.lengths[index])
        return Posting(self.record_ids[index], tuple(self.tf[index].tolist()),
                       tuple(self.lengths[index].tolist()))

    def __iter__(self) -> Iterator[Posting]:
        for record_id, tf, lengths in zip(self.record_ids, self.tf.tolist(),
                                          self.lengths.tolist(), strict=True):
            yield Posting(record_id, tuple(tf), tuple(lengths))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same postings in the same order (a list too)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: like a list, unhashable

    def __repr__(self) -> str:
        return f"PostingColumns({list(self)!r})"

    def take(self, index: NDArray[np.intp]) -> PostingColumns:
        """The postings at the given positions, in that order."""
        ids = self.record_ids
        return PostingColumns([ids[i] for i in index.tolist()], self.codes[index],
                              self.tf[index], self.lengths[index])

    def without(self, record_ids: Collection[str]) -> PostingColumns:
        """These postings less the given records'."""
        kept = [i for i, rid in enumerate(self.record_ids) if rid not in record_ids]
        return self if len(kept) == len(self) else self.take(np.array(kept, dtype=np.intp))

    def plus(self, other: PostingColumns) -> PostingColumns:
        """These postings, then the other's."""
        if not len(other):
            return self
        return PostingColumns([*self.record_ids, *other.record_ids],
                              np.concatenate([self.codes, other.codes]),
                              np.concatenate([self.tf, other.tf]),
                              np.concatenate([self.lengths, other.lengths]))

    def best(self, limit: int) -> PostingColumns:
        """The ``limit`` best postings by the stored keys' order (impact code, then record
        id, both descending): the postings ``posting_blocks.best`` returns, kept in read
        order (scores do not depend on it). A read holds only a block's worth more than it
        needs, so only the postings tied at the cut are compared by record id."""
        if len(self) <= limit:
            return self
        if limit <= 0:
            return self.take(np.zeros(0, dtype=np.intp))
        cut = int(np.partition(self.codes, len(self) - limit)[len(self) - limit])
        above = self.codes > cut
        tied = np.flatnonzero(self.codes == cut).tolist()
        ids = self.record_ids
        tied.sort(key=ids.__getitem__, reverse=True)
        room = limit - int(np.count_nonzero(above))
        chosen = above
        chosen[tied[:room]] = True
        return self.take(np.flatnonzero(chosen))

    def gains(self, weight: float, averages: Sequence[float],
              config: RankingConfig) -> tuple[list[str], list[float]]:
        """Each posting's BM25F gain under a term of idf ``weight`` (the record ids and gains
        of the postings with a positive pseudo frequency, in order), computed as
        ``score_map`` computes it: field by field, a field without the term adding nothing."""
        tf = self.tf.astype(np.float64)
        lengths = self.lengths.astype(np.float64)
        pseudo = np.zeros(len(self), dtype=np.float64)
        part = np.empty(len(self), dtype=np.float64)
        for i in range(_FIELDS):
            present = tf[:, i] > 0
            if not present.any():
                continue
            b = config.b[i]
            norm = (1.0 - b) + (b * lengths[:, i]) / averages[i]
            part.fill(0.0)
            np.divide(config.weights[i] * tf[:, i], norm, out=part, where=present)
            pseudo += part
        scored = pseudo > 0.0
        gain = (weight * pseudo) / (config.k1 + pseudo)
        if bool(scored.all()):
            return self.record_ids, gain.tolist()
        kept = np.flatnonzero(scored)
        return [self.record_ids[i] for i in kept.tolist()], gain[kept].tolist()


def decode_columns(blocks: Sequence[bytes]) -> PostingColumns:
    """The postings of these blocks (``posting_blocks`` bytes), in their stored order, as
    columns. Blocks of compact ids with narrow numbers (nearly all) are read as one array,
    no object per posting; any other block is decoded posting by posting."""
    data = b"".join(blocks)
    if not is_compact_narrow(data):
        return PostingColumns.of((e.code, e.posting) for block in blocks for e in decode(block))
    rows = np.frombuffer(data, dtype=_COMPACT_NARROW)
    raw = np.frombuffer(data, dtype=np.uint8).reshape(len(rows), _COMPACT_NARROW.itemsize)
    return PostingColumns(_id_texts(raw[:, 1:1 + _ID_BYTES]), rows["code"].astype(np.int64),
                          rows["tf"].astype(np.int64), rows["lengths"].astype(np.int64))


# Base32 by ten-bit pairs of characters, little-endian so a uint16 holds them in text order.
_PAIRS = np.array([_c | (_d << 8) for _c in b"abcdefghijklmnopqrstuvwxyz234567"
                   for _d in b"abcdefghijklmnopqrstuvwxyz234567"], dtype="<u2")
_PAIR_SHIFTS = np.array([30, 20, 10, 0], dtype=np.uint64)
_GROUPED = [g * 8 + 3 + i for g in range(7) for i in range(5)][:_ID_BYTES]
"""Where each id byte goes when 35 bytes (the 32, zero padded) are seven big-endian 40-bit
groups, each in the low five bytes of a uint64."""


def _id_texts(raw: NDArray[np.uint8]) -> list[str]:
    """``posting_blocks.compact_id_text`` of each row of 32 id bytes, all at once: the
    ``mem_`` ids of a read's postings (a Python loop over 8,000 ids cost ≈ 20 ms, this ≈ 3;
    the same text, tested). Each 40-bit group is four pairs of base32 characters; the 260
    bits of 7 groups past the id's 256 are zero, so its 52 characters are the first 52."""
    count = len(raw)
    groups = np.zeros((count, 56), dtype=np.uint8)
    groups[:, _GROUPED] = raw
    values = groups.view(">u8")  # (count, 7)
    pairs = _PAIRS[(values[:, :, None] >> _PAIR_SHIFTS) & 1023]  # (count, 7, 4)
    text = np.empty((count, 57), dtype=np.uint8)
    text[:, :4] = np.frombuffer(b"mem_", dtype=np.uint8)
    text[:, 4:56] = pairs.reshape(count, 28).view(np.uint8)[:, :52]
    text[:, 56] = ord("\n")
    return text.tobytes().decode("ascii").split("\n")[:count]
