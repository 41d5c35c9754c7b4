"""A search's postings as columns rank exactly as the same postings one by one do.

Decoding blocks into columns, choosing a term's best postings, scoring them and ordering the
candidates are each checked against the object-per-posting functions they replace (the
definitions of the ranking), on any postings: the same postings, the same floats bit for
bit, the same order.
"""

from __future__ import annotations

import base64
import hashlib

from engram_memory.domain.completion import lacking, to_complete
from engram_memory.domain.posting_blocks import (
    CODE_LIMIT,
    BlockPosting,
    best,
    decode,
    layout,
    posting_count,
)
from engram_memory.domain.posting_columns import PostingColumns, decode_columns
from engram_memory.domain.ranking import (
    SCORE_DECIMALS,
    CorpusStats,
    Posting,
    RankingConfig,
    ScoredRecord,
    order,
    score_map,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _record_id(seed: str) -> str:
    raw = hashlib.sha256(seed.encode()).digest()
    return "mem_" + base64.b32encode(raw).decode().rstrip("=").lower()


def _raw_id(raw: bytes) -> str:
    return "mem_" + base64.b32encode(raw).decode().rstrip("=").lower()


# Any 32 bytes, the all-zero and all-one ids among them (search turns ids to text in bulk).
product_ids = st.one_of(st.text(min_size=1, max_size=12).map(_record_id),
                        st.binary(min_size=32, max_size=32).map(_raw_id),
                        st.sampled_from([_raw_id(b"\0" * 32), _raw_id(b"\xff" * 32)]))
record_ids = st.one_of(product_ids, st.text(min_size=1, max_size=40))
small = st.integers(min_value=0, max_value=255)


def entries_of(ids: st.SearchStrategy[str], tf: st.SearchStrategy[int],
               lengths: st.SearchStrategy[int]) -> st.SearchStrategy[list[BlockPosting]]:
    return st.lists(st.builds(
        BlockPosting,
        code=st.one_of(st.integers(0, CODE_LIMIT - 1), st.sampled_from([7, 7_000_000])),
        posting=st.builds(Posting, record_id=ids, tf=st.tuples(*[tf] * 5),
                          lengths=st.tuples(*[lengths] * 5))),
        max_size=40, unique_by=lambda e: e.posting.record_id)


# What nearly every block is (product ids, narrow numbers), and anything else.
narrow = entries_of(product_ids, small, st.integers(0, 2**16 - 1))
anything = entries_of(record_ids, st.one_of(small, st.integers(0, 2**32 - 1)),
                      st.integers(0, 2**32 - 1))
some_entries = st.one_of(narrow, anything)


def _blocks(entries: list[BlockPosting]) -> list[bytes]:
    blocks = layout(entries)
    return [blocks[key] for key in sorted(blocks, reverse=True)]


@relaxed
@given(some_entries)
def test_blocks_decode_to_columns_of_the_same_postings_in_the_same_order(
        entries: list[BlockPosting]) -> None:
    blocks = _blocks(entries)
    one_by_one = [e for block in blocks for e in decode(block)]
    columns = decode_columns(blocks)
    assert list(columns) == [e.posting for e in one_by_one]
    assert columns.codes.tolist() == [e.code for e in one_by_one]
    assert [posting_count(block) for block in blocks] == [len(decode(b)) for b in blocks]


def _posting_key(posting: Posting) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    return posting.record_id, posting.tf, posting.lengths


@relaxed
@given(some_entries, st.integers(min_value=0, max_value=45))
def test_the_best_postings_of_columns_are_the_best_of_the_postings(
        entries: list[BlockPosting], limit: int) -> None:
    columns = decode_columns(_blocks(entries))
    chosen = columns.best(limit)
    expected = best(entries, limit)
    stats = CorpusStats(1000, (900, 800, 700, 600, 500))
    assert score_map(["t"], {"t": chosen}, stats) == score_map(["t"], {"t": expected}, stats)
    assert sorted(chosen, key=_posting_key) == sorted(expected, key=_posting_key)
    assert len(chosen) == len(expected)
    # Kept in read order.
    positions = [columns.record_ids.index(rid) for rid in chosen.record_ids]
    assert positions == sorted(positions)


@given(narrow)
def test_columns_compare_equal_to_the_list_of_their_postings(entries: list[BlockPosting]) -> None:
    columns = PostingColumns.of((e.code, e.posting) for e in entries)
    postings = [e.posting for e in entries]
    assert columns == postings
    assert postings == columns
    assert len(columns) == len(postings)
    assert all(columns[i] == postings[i] for i in range(len(postings)))
    assert columns[1:3] == postings[1:3]


configs = st.builds(
    RankingConfig,
    k1=st.floats(min_value=0.1, max_value=4.0),
    b=st.tuples(*[st.sampled_from([0.0, 0.3, 0.5, 0.75, 0.9])] * 5),  # b < 1: norm > 0
    weights=st.tuples(*[st.floats(min_value=0.0, max_value=5.0)] * 5),
)


@relaxed
@given(st.lists(some_entries, min_size=1, max_size=3), st.integers(1, 10**6),
       st.tuples(*[st.integers(0, 10**9)] * 5), configs, st.data())
def test_columns_score_bit_for_bit_as_postings_scored_one_by_one(
        per_term: list[list[BlockPosting]], doc_count: int, sums: tuple[int, ...],
        config: RankingConfig, data: st.DataObject) -> None:
    terms = [f"t{i}" for i in range(len(per_term))]
    lists = {t: [e.posting for e in entries] for t, entries in zip(terms, per_term, strict=True)}
    columns = {t: PostingColumns.of((e.code, e.posting) for e in entries)
               for t, entries in zip(terms, per_term, strict=True)}
    dfs = {t: data.draw(st.integers(0, 10**6)) for t in terms}
    stats = CorpusStats(doc_count, sums)
    expected = score_map(terms, lists, stats, config, dfs)
    found = score_map(terms, columns, stats, config, dfs)
    assert list(found) == list(expected)  # the same candidates, met in the same order
    assert all(found[rid] == expected[rid] for rid in expected)  # exact: not approximately
    open_ = frozenset(terms)
    chosen = list(expected)
    assert lacking(chosen, columns, open_) == lacking(chosen, lists, open_)


# Few distinct scores, so ties (broken by record id) are common; scores that differ only
# past the ninth decimal tie too, as the ranking rounds them.
scores = st.dictionaries(
    st.text(alphabet="abcdef", min_size=1, max_size=4),
    st.one_of(st.sampled_from([0.0, 0.5, 1.25, 1.2500000000001, 1.2499999999, 3.0, 7.75]),
              st.floats(min_value=0.0, max_value=50.0)),
    max_size=60,
)


def _reference(partial: dict[str, float]) -> list[ScoredRecord]:
    ranked = sorted(partial.items(), key=lambda kv: (-round(kv[1], SCORE_DECIMALS), kv[0]))
    return [ScoredRecord(rid, round(score, SCORE_DECIMALS)) for rid, score in ranked]


@given(scores, st.integers(min_value=0, max_value=70), st.integers(min_value=-70, max_value=70),
       st.slices(70))
def test_a_ranking_read_in_part_is_the_full_sort_of_rounded_scores(
        partial: dict[str, float], stop: int, index: int, part: slice) -> None:
    reference = _reference(partial)
    assert order(partial)[part] == reference[part]  # any slice, negative steps too
    interleaved = order(partial)  # iterated while other reads rank further
    walked = []
    for position, hit in enumerate(interleaved):
        walked.append(hit)
        interleaved[min(len(reference) - 1, position + 2)]
    assert walked == reference
    assert order(partial)[:stop] == reference[:stop]
    if -len(reference) <= index < len(reference):
        assert order(partial)[index] == reference[index]
    ranking = order(partial)
    assert ranking[:stop] == reference[:stop]
    assert list(ranking) == reference
    assert ranking == reference
    assert len(ranking) == len(reference)


@given(scores, st.integers(min_value=0, max_value=70))
def test_the_candidates_completed_are_the_best_cap_by_rounded_score_then_id(
        partial: dict[str, float], cap: int) -> None:
    assert to_complete(partial, cap) == [hit.record_id for hit in _reference(partial)[:cap]]
