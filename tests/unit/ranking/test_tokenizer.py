from __future__ import annotations

from engram_memory.domain.tokenizer import (
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    query_terms,
    term_frequencies,
    tokenize,
)


def test_text_is_nfkc_normalized_and_casefolded_before_splitting() -> None:
    assert tokenize("Ｅｎｇｒａｍ Straße ﬁle") == ["engram", "strass", "file"]


def test_punctuation_and_underscores_separate_words() -> None:
    terms = tokenize("retry_policy=exponential, (v2.1)")
    assert terms == ["retri", "polici", "exponenti", "v2", "1"]


def test_stopwords_are_dropped_and_words_reduced_to_their_snowball_english_stem() -> None:
    assert tokenize("The tables of the deployments") == ["tabl", "deploy"]


def test_inflected_forms_of_a_word_share_one_term() -> None:
    # What stemming is for: a query for one form finds a record written with another.
    forms = ["deploy", "deploys", "deployed", "deploying", "deployment", "deployments"]
    assert {term for form in forms for term in tokenize(form)} == {"deploy"}
    assert query_terms("Retrying failed flows") == tuple(tokenize("retry fails flow"))


def test_a_stopword_is_dropped_by_its_surface_form_before_stemming() -> None:
    # "was" is a stopword; "wash" stems to "wash" and stays.
    assert tokenize("was washing") == ["wash"]


def test_non_latin_words_are_kept_as_terms() -> None:
    assert tokenize("Тест διάταξη") == ["тест", "διάταξη"]


def test_a_very_long_word_is_cut_to_the_term_limit() -> None:
    [term] = tokenize("x" * 500)
    assert term == "x" * MAX_TERM_CHARS


def test_term_frequencies_count_repeats() -> None:
    assert term_frequencies("cache caches miss") == {"cach": 2, "miss": 1}


def test_query_terms_are_distinct_in_first_occurrence_order() -> None:
    assert query_terms("Lambda cold start lambda START") == ("lambda", "cold", "start")


def test_a_query_uses_at_most_the_term_cap() -> None:
    words = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 10))
    terms = query_terms(words)
    assert len(terms) == MAX_QUERY_TERMS
    assert terms[-1] == f"w{MAX_QUERY_TERMS - 1}"


def test_a_query_of_only_stopwords_has_no_terms() -> None:
    assert query_terms("what is the") == ()


def test_threads_stemming_at_once_get_the_stems_one_thread_gets() -> None:
    # The projector, search's pools and the local service tokenize on several threads; a
    # Snowball stemmer object keeps its word in its own fields while it works.
    import random
    import sys
    import threading

    from engram_memory.domain import tokenizer
    from snowballstemmer.english_stemmer import EnglishStemmer

    rng = random.Random(13)
    suffixes = ["ational", "iveness", "fulness", "ization", "ement", "ingly", "ations", "s"]
    words = sorted({"".join(rng.choice("bcdfgklmnprstv") + rng.choice("aeiou")
                            for _ in range(rng.randint(2, 5))) + rng.choice(suffixes)
                    for _ in range(6000)})
    expected = {word: EnglishStemmer().stemWord(word) for word in words}
    tokenizer.stem.cache_clear()
    found: dict[str, str] = {}
    failures: list[BaseException] = []

    def work(part: list[str]) -> None:
        try:
            found.update({word: tokenizer.stem(word) for word in part})
        except Exception as exc:  # any failure of a racing thread counts
            failures.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show at once
    try:
        threads = [threading.Thread(target=work, args=(words[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        tokenizer.stem.cache_clear()
    assert failures == []
    assert found == expected
