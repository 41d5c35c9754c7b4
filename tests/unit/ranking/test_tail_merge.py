"""The journal-tail merge turns the projection's view into the one it will have after the tail."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from engram_memory.domain.impact import impact_code, top_postings
from engram_memory.domain.posting_columns import PostingColumns
from engram_memory.domain.ranking import (
    DEFAULT_CONFIG,
    FieldDocument,
    ScoredRecord,
    analyze,
    build_index,
    score_postings,
)
from engram_memory.domain.tail_merge import CountedDocument, TailDelta, merge_tail
from engram_memory.domain.tokenizer import query_terms

TEXTS = {
    "rec_1": ("Heron cache warms at boot.", "The heron gateway."),
    "rec_2": ("Heron gateway timeout is long.", "Cache misses on heron."),
    "rec_3": ("Ibis scheduler pins the cache.", ""),
    "rec_4": ("Heron heron heron cache cache.", "Gateway gateway."),
    "rec_5": ("Heron scheduler rebuilds the gateway cache nightly.", "Ibis."),
    "rec_6": ("Gateway for ibis and heron.", "A long context " + "filler " * 20),
}
QUERY = "heron cache gateway ibis scheduler"


def _doc(record_id: str) -> FieldDocument:
    primary, context = TEXTS[record_id]
    return FieldDocument(record_id, {"primary": primary, "context": context})


def _ranked_over(ids: list[str], k: int) -> Sequence[ScoredRecord]:
    """What search ranks when the projection holds exactly ``ids`` (best k per term)."""
    postings, stats = build_index(_doc(i) for i in ids)
    terms = query_terms(QUERY)
    selected = {t: top_postings(postings.get(t, []), k) for t in terms}
    dfs = {t: len(postings.get(t, [])) for t in terms}
    return score_postings(terms, selected, stats, DEFAULT_CONFIG, dfs)


def _merged(projected: list[str], delta: TailDelta, k: int) -> Sequence[ScoredRecord]:
    postings, stats = build_index(_doc(i) for i in projected)
    terms = query_terms(QUERY)
    selected = {t: top_postings(postings.get(t, []), k) for t in terms}
    dfs = {t: len(postings.get(t, [])) for t in terms}
    view = merge_tail(terms, selected, stats, dfs, delta, k)
    # A search's read comes as columns (domain/posting_columns.py): merged the same way.
    as_columns = {t: PostingColumns.of((impact_code(p.tf, p.lengths), p) for p in read)
                  for t, read in selected.items()}
    columns_view = merge_tail(terms, as_columns, stats, dfs, delta, k)
    # The same postings (columns keep read order; the order of a term's postings does not
    # change a score).
    assert {t: sorted(ps, key=lambda p: p.record_id) for t, ps in columns_view.postings.items()} \
        == {t: sorted(ps, key=lambda p: p.record_id) for t, ps in view.postings.items()}
    assert columns_view.dfs == view.dfs
    assert all(isinstance(read, PostingColumns) for read in columns_view.postings.values())
    return score_postings(terms, view.postings, view.stats, DEFAULT_CONFIG, view.dfs)


def _counted(record_id: str) -> CountedDocument:
    analyzed = analyze(_doc(record_id))
    return CountedDocument(record_id, analyzed.lengths, frozenset(analyzed.frequencies))


def test_admissions_and_a_removal_in_the_tail_give_the_drained_ranking_exactly() -> None:
    # Projected: 1-4. Tail: 5 and 6 admitted, 4 forgotten, 3 touched but still current.
    delta = TailDelta(
        current=(analyze(_doc("rec_3")), analyze(_doc("rec_5")), analyze(_doc("rec_6"))),
        uncounted=frozenset({"rec_5", "rec_6"}),
        gone=frozenset({"rec_4"}),
        counted_gone=(_counted("rec_4"),),
    )
    merged = _merged(["rec_1", "rec_2", "rec_3", "rec_4"], delta, k=1000)
    assert merged == _ranked_over(["rec_1", "rec_2", "rec_3", "rec_5", "rec_6"], k=1000)
    assert "rec_4" not in {hit.record_id for hit in merged}


@pytest.mark.parametrize("k", [1, 2, 3])
def test_tail_admissions_compete_for_the_best_k_like_stored_postings(k: int) -> None:
    delta = TailDelta(current=(analyze(_doc("rec_4")), analyze(_doc("rec_5"))),
                      uncounted=frozenset({"rec_4", "rec_5"}))
    merged = _merged(["rec_1", "rec_2", "rec_3"], delta, k=k)
    assert merged == _ranked_over(["rec_1", "rec_2", "rec_3", "rec_4", "rec_5"], k=k)


def test_a_record_already_counted_is_not_counted_twice() -> None:
    # The projector indexed rec_2 but has not passed its event yet: it is current, counted.
    delta = TailDelta(current=(analyze(_doc("rec_2")),), uncounted=frozenset())
    assert _merged(["rec_1", "rec_2"], delta, k=1000) == _ranked_over(["rec_1", "rec_2"], 1000)


def test_a_gone_record_the_projection_never_counted_only_loses_its_postings() -> None:
    # Orphan postings of a crashed indexing attempt, then a forget: nothing to subtract.
    delta = TailDelta(gone=frozenset({"rec_2"}))
    postings, stats = build_index(_doc(i) for i in ["rec_1", "rec_2"])
    terms = query_terms(QUERY)
    view = merge_tail(terms, postings, stats, {t: 1 for t in terms}, delta, 1000)
    assert view.stats == stats
    assert all(p.record_id == "rec_1" for ps in view.postings.values() for p in ps)


def test_an_empty_tail_changes_nothing() -> None:
    assert _merged(["rec_1", "rec_6"], TailDelta(), k=2) == _ranked_over(["rec_1", "rec_6"], 2)
