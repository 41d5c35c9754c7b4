from __future__ import annotations

from engram_memory.domain.tokenizer import (
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    query_terms,
    term_frequencies,
    tokenize,
)


def test_text_is_nfkc_normalized_and_casefolded_before_splitting() -> None:
    assert tokenize("Ｅｎｇｒａｍ Straße ﬁle") == ["engram", "strasse", "file"]


def test_punctuation_and_underscores_separate_words() -> None:
    terms = tokenize("retry_policy=exponential, (v2.1)")
    assert terms == ["retry", "policy", "exponential", "v2", "1"]


def test_stopwords_are_dropped_and_no_stemming_is_applied() -> None:
    assert tokenize("The tables of the deployments") == ["tables", "deployments"]


def test_non_latin_words_are_kept_as_terms() -> None:
    assert tokenize("Тест διάταξη") == ["тест", "διάταξη"]


def test_a_very_long_word_is_cut_to_the_term_limit() -> None:
    [term] = tokenize("x" * 500)
    assert term == "x" * MAX_TERM_CHARS


def test_term_frequencies_count_repeats() -> None:
    assert term_frequencies("cache cache miss") == {"cache": 2, "miss": 1}


def test_query_terms_are_distinct_in_first_occurrence_order() -> None:
    assert query_terms("Lambda cold start lambda START") == ("lambda", "cold", "start")


def test_a_query_uses_at_most_the_term_cap() -> None:
    words = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 10))
    terms = query_terms(words)
    assert len(terms) == MAX_QUERY_TERMS
    assert terms[-1] == f"w{MAX_QUERY_TERMS - 1}"


def test_a_query_of_only_stopwords_has_no_terms() -> None:
    assert query_terms("what is the") == ()
