from __future__ import annotations

import math

import pytest
from engram_memory.domain.ranking import (
    DEFAULT_CONFIG,
    FIELDS,
    CorpusStats,
    FieldDocument,
    Posting,
    RankingConfig,
    analyze,
    build_index,
    idf,
    rank_documents,
    score_postings,
)


def test_a_tiny_corpus_scores_exactly_as_computed_by_hand() -> None:
    # N=2, df(apple)=2 → idf = ln(1 + 0.5/2.5) = ln 1.2 = 0.1823215568
    # avg primary = 2/2 = 1.0, avg context = 3/2 = 1.5
    # A: primary tf 1, len 2 → norm .25+.75*2/1 = 1.75, tf~ = 3/1.75 = 1.7142857
    #    score = 0.1823215568 * 1.7142857 / (k1 2.5 + 1.7142857) = 0.0741647011
    # B: context tf 2, len 3 → norm .25+.75*3/1.5 = 1.75, tf~ = 2/1.75 = 1.1428571
    #    score = 0.1823215568 * 1.1428571 / (k1 2.5 + 1.1428571) = 0.0571989198
    docs = [
        FieldDocument("mem_a", {"primary": "apple pie"}),
        FieldDocument("mem_b", {"context": "apple apple banana"}),
    ]
    ranked = rank_documents("apple", docs)
    assert [r.record_id for r in ranked] == ["mem_a", "mem_b"]
    assert ranked[0].score == pytest.approx(0.0741647011, abs=1e-9)
    assert ranked[1].score == pytest.approx(0.0571989198, abs=1e-9)


def test_idf_matches_the_documented_formula_and_never_goes_negative() -> None:
    assert idf(10, 1) == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert idf(10, 10) > 0
    # A lagging document counter (N < df) is treated as N = df.
    assert idf(1, 5) == idf(5, 5)


def test_the_same_word_weighs_primary_over_decision_evidence_context_citations() -> None:
    docs = [FieldDocument(f"mem_{name}", {name: "quorum"}) for name in FIELDS]
    # Every other field gets one filler word so all lengths and averages are equal.
    docs = [
        FieldDocument(d.record_id, {f: (d.fields.get(f) or "filler") for f in FIELDS})
        for d in docs
    ]
    ranked = rank_documents("quorum", docs)
    assert [r.record_id for r in ranked] == [f"mem_{name}" for name in FIELDS]


def test_equal_scores_are_ordered_by_record_id_ascending() -> None:
    docs = [FieldDocument(rid, {"primary": "same text"}) for rid in ("mem_c", "mem_a", "mem_b")]
    ranked = rank_documents("text", docs)
    assert [r.record_id for r in ranked] == ["mem_a", "mem_b", "mem_c"]
    assert len({r.score for r in ranked}) == 1


def test_documents_without_any_query_term_are_not_returned() -> None:
    docs = [
        FieldDocument("mem_a", {"primary": "alpha"}),
        FieldDocument("mem_b", {"primary": "beta"}),
    ]
    assert [r.record_id for r in rank_documents("alpha gamma", docs)] == ["mem_a"]


def test_a_query_with_no_terms_ranks_nothing() -> None:
    assert rank_documents("the of", [FieldDocument("mem_a", {"primary": "the of alpha"})]) == []


def test_a_longer_field_scores_lower_for_the_same_frequency() -> None:
    docs = [
        FieldDocument("mem_short", {"context": "cache"}),
        FieldDocument("mem_long", {"context": "cache " + "word " * 20}),
    ]
    assert [r.record_id for r in rank_documents("cache", docs)] == ["mem_short", "mem_long"]


def test_scoring_from_stored_statistics_equals_scoring_the_documents() -> None:
    docs = [
        FieldDocument("mem_1", {"primary": "deploy lambda", "evidence": "cdk synth log"}),
        FieldDocument("mem_2", {"decision": "use lambda", "citations": "docs/lambda.md"}),
        FieldDocument("mem_3", {"context": "unrelated text"}),
    ]
    expected = rank_documents("lambda deploy", docs)
    # Rebuild postings the way the projection stores them: tf and lengths per posting.
    stored: dict[str, list[Posting]] = {}
    sums = [0] * len(FIELDS)
    for doc in docs:
        analyzed = analyze(doc)
        sums = [a + b for a, b in zip(sums, analyzed.lengths, strict=True)]
        for term, tf in analyzed.frequencies.items():
            stored.setdefault(term, []).append(Posting(doc.record_id, tf, analyzed.lengths))
    stats = CorpusStats(doc_count=3, length_sums=tuple(sums))
    assert score_postings(["lambda", "deploy"], stored, stats) == expected


def test_build_index_counts_documents_and_field_lengths() -> None:
    postings, stats = build_index([FieldDocument("mem_a", {"primary": "a b c", "context": "d"})])
    assert stats.doc_count == 1
    assert stats.length_sums == (2, 0, 0, 1, 0)  # "a" is a stopword
    assert set(postings) == {"b", "c", "d"}


def test_the_config_digest_changes_with_any_parameter() -> None:
    other = RankingConfig(k1=1.5)
    assert DEFAULT_CONFIG.config_digest != other.config_digest
    assert DEFAULT_CONFIG.config_digest == RankingConfig().config_digest


def test_a_config_needs_one_b_and_one_weight_per_field() -> None:
    with pytest.raises(ValueError, match="per field"):
        RankingConfig(b=(0.75,))


def test_a_long_query_shares_one_postings_budget_so_its_cost_stays_bounded() -> None:
    config = RankingConfig(postings_per_term=1000, postings_budget=4000)
    assert config.postings_for(1) == 1000  # short queries keep the full K
    assert config.postings_for(4) == 1000
    assert config.postings_for(8) == 500
    assert config.postings_for(64) * 64 <= max(4000, 64 * 100)
    assert config.postings_for(1000) == 100  # never below the per-term floor
    assert RankingConfig(postings_budget=2000).config_digest != RankingConfig().config_digest
