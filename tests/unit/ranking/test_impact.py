from __future__ import annotations

import pytest
from engram_memory.domain.impact import (
    impact,
    impact_code,
    posting_codes,
    record_of,
    score_top_k,
    sort_key,
    top_postings,
)
from engram_memory.domain.ranking import (
    DEFAULT_CONFIG,
    FieldDocument,
    Posting,
    RankingConfig,
    ScoredRecord,
    analyze,
    build_index,
    idf,
    rank_documents,
    score_postings,
)
from engram_memory.domain.tokenizer import query_terms

PRIMARY_ONLY = (5, 0, 0, 0, 0)


def _budget_only(query: str, docs: list[FieldDocument],
                 config: RankingConfig) -> list[ScoredRecord]:
    """Each term's best postings within the budget, scored over an index of ``docs``."""
    postings, stats = build_index(docs)
    return score_top_k(query_terms(query), postings, stats, config)


def _posting(record_id: str, tf: int, length: int) -> Posting:
    return Posting(record_id, (tf, 0, 0, 0, 0), (length, 0, 0, 0, 0))


def test_impact_grows_with_term_frequency_and_shrinks_with_field_length() -> None:
    assert impact((2, 0, 0, 0, 0), PRIMARY_ONLY) > impact((1, 0, 0, 0, 0), PRIMARY_ONLY)
    assert impact((1, 0, 0, 0, 0), (5, 0, 0, 0, 0)) > impact((1, 0, 0, 0, 0), (50, 0, 0, 0, 0))
    assert 0.0 <= impact((1000, 0, 0, 0, 0), PRIMARY_ONLY) < 1.0


def test_the_impact_code_depends_on_the_document_alone() -> None:
    analyzed = analyze(FieldDocument("mem_a", {"primary": "retry retry queue", "context": "x"}))
    # No corpus statistics go in: the same document always yields the same keys.
    assert posting_codes(analyzed) == posting_codes(analyzed)
    assert set(posting_codes(analyzed)) == {"retri", "queue", "x"}
    assert posting_codes(analyzed)["retri"] > posting_codes(analyzed)["queue"]


def test_sort_keys_order_as_strings_exactly_as_impact_then_record_id() -> None:
    codes = [0, 7, 123_456, 999_999_999]
    keys = [sort_key(code, "mem_b") for code in codes]
    assert sorted(keys) == keys
    assert sort_key(5, "mem_a") < sort_key(5, "mem_b") < sort_key(6, "mem_a")
    assert record_of(sort_key(42, "mem_01HXYZ")) == "mem_01HXYZ"


def test_top_postings_returns_the_k_highest_impact_postings_first() -> None:
    postings = [_posting(f"mem_{i}", tf, 10) for i, tf in enumerate([1, 4, 2, 3])]
    top = top_postings(postings, 2)
    assert [p.record_id for p in top] == ["mem_1", "mem_3"]
    assert len(top_postings(postings, 10)) == 4


def test_equal_impacts_are_cut_by_record_id_newest_first() -> None:
    postings = [_posting(rid, 1, 10) for rid in ("mem_a", "mem_c", "mem_b")]
    assert [p.record_id for p in top_postings(postings, 2)] == ["mem_c", "mem_b"]


def test_with_k_at_least_every_df_the_bounded_ranking_equals_the_exhaustive_one() -> None:
    docs = [FieldDocument(f"mem_{i}", {"primary": f"deploy lambda {'cache ' * (i % 3)}",
                                       "context": f"note {i} on lambda"}) for i in range(12)]
    bounded = _budget_only("lambda cache deploy", docs, RankingConfig(postings_per_term=12))
    assert bounded == rank_documents("lambda cache deploy", docs)


def test_a_document_outside_every_terms_top_k_is_not_found() -> None:
    # The documented trade-off: "common" is in all six, mem_5 only has the weakest posting.
    docs = [FieldDocument(f"mem_{i}", {"primary": "common " * (6 - i) + "filler " * i})
            for i in range(6)]
    ranked = _budget_only("common", docs, RankingConfig(postings_per_term=3))
    assert [r.record_id for r in ranked] == ["mem_0", "mem_1", "mem_2"]


def test_bounded_scores_use_the_full_document_frequency_not_the_postings_read() -> None:
    docs = [FieldDocument(f"mem_{i}", {"primary": "common " * (6 - i) + "filler " * i})
            for i in range(6)]
    postings, stats = build_index(docs)
    exhaustive = {r.record_id: r.score for r in score_postings(["common"], postings, stats)}
    bounded = _budget_only("common", docs, RankingConfig(postings_per_term=3))
    # The candidates read keep exactly the score they have over the whole index.
    for hit in bounded:
        assert hit.score == exhaustive[hit.record_id]


def test_a_stored_df_below_the_postings_read_never_inflates_idf() -> None:
    postings = {"t": [_posting("mem_a", 1, 4), _posting("mem_b", 1, 4)]}
    stats = build_index([FieldDocument(f"mem_{i}", {"primary": "t x y z"}) for i in range(10)])[1]
    lagging = score_postings(["t"], postings, stats, document_frequencies={"t": 1})
    counted = score_postings(["t"], postings, stats, document_frequencies={"t": 2})
    assert lagging == counted
    larger = score_postings(["t"], postings, stats, document_frequencies={"t": 8})
    assert larger[0].score < counted[0].score
    assert larger[0].score / counted[0].score == pytest.approx(idf(10, 8) / idf(10, 2), rel=1e-6)


def test_the_config_digest_names_the_postings_read_per_term() -> None:
    assert RankingConfig(postings_per_term=50).config_digest != DEFAULT_CONFIG.config_digest
    with pytest.raises(ValueError, match="positive"):
        RankingConfig(postings_per_term=0)


def test_impact_codes_are_fixed_width_integers() -> None:
    code = impact_code((3, 1, 0, 0, 2), (20, 4, 0, 0, 3))
    assert isinstance(code, int)
    assert 0 <= code < 10**9
    assert len(sort_key(code, "mem_a").partition("#")[0]) == 9


def test_every_projection_key_names_its_generation() -> None:
    from engram_memory.adapters.dynamodb.projection_generations import (
        LEGACY_GENERATION,
        generation_of,
    )
    from engram_memory.domain.ranking import PROJECTION_GENERATION

    g = PROJECTION_GENERATION
    assert generation_of(f"POST#t#w#{g}#retri") == g
    assert generation_of(f"DF#t#w#{g}#retri") == g
    assert generation_of(f"DOC#t#w#{g}") == g
    assert generation_of(f"STATS#t#w#{g}") == g
    assert generation_of("POST#t#w#retry") == LEGACY_GENERATION
    assert generation_of("STATS#t#w") == LEGACY_GENERATION
    assert generation_of("SCOPE#t#w") is None
