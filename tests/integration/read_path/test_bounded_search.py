"""Search reads at most K postings per term; df counters stay exact through every write path."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.domain.context import Scope
from engram_memory.domain.impact import rank_top_k
from engram_memory.domain.ranking import (
    AnalyzedDocument,
    FieldDocument,
    RankingConfig,
    analyze,
    rank_documents,
)
from engram_memory.domain.search_fields import record_document

from tests.integration.read_path.conftest import ReadPath, ids
from tests.integration.read_path.test_projector import _projector, _stream_records

# Record n says "quokka" n times in its primary text: impact rises with n.
TEXTS = [("quokka " * n) + f"filler{n} " * (8 - n) for n in range(1, 8)]


def _projection_items(read_path: ReadPath) -> list[dict[str, Any]]:
    return read_path.aws.scan(read_path.aws.settings.projection_table_name)


def _df_matches_postings(read_path: ReadPath) -> dict[str, int]:
    """Assert every df counter equals its term's posting count; return the counters."""
    items = _projection_items(read_path)
    postings = Counter(i["pk"]["S"].rsplit("#", 1)[1] for i in items
                       if i["pk"]["S"].startswith("POST#"))
    counters = {i["pk"]["S"].rsplit("#", 1)[1]: int(i["df"]["N"]) for i in items
                if i["pk"]["S"].startswith("DF#")}
    assert {t: n for t, n in counters.items() if n} == dict(postings)
    return counters


def _query_sizes(read_path: ReadPath) -> list[int]:
    """Record how many items each Query of the search client returns."""
    sizes: list[int] = []

    def after(parsed: dict[str, Any], **_: Any) -> None:
        sizes.append(len(parsed.get("Items", [])))

    bootstrap.dynamodb_client().meta.events.register("after-call.dynamodb.Query", after)
    return sizes


def read_path_fields(read_path: ReadPath, record_id: str) -> dict[str, str]:
    """The ranker fields of a stored record, as the projector derives them."""
    record = json.loads(read_path.record_item(record_id)["record_json"]["S"])
    return dict(record_document(record_id, record).fields)


def _bounded(read_path: ReadPath, k: int) -> None:
    read_path.aws.configure(ENGRAM_SEARCH_POSTINGS_PER_TERM=str(k))
    read_path.rewire()


def test_search_reads_only_the_k_highest_impact_postings_of_a_term(read_path: ReadPath) -> None:
    record_ids = [read_path.admit(text) for text in TEXTS]
    read_path.project()
    _bounded(read_path, 3)
    sizes = _query_sizes(read_path)
    envelope = read_path.search("quokka", limit=10)
    assert ids(envelope) == list(reversed(record_ids))[:3]
    assert sizes == [3]
    assert envelope["output"]["value"]["rank_receipt"]["candidate_count"] == 3


def test_bounded_scores_equal_bm25f_over_the_whole_scope(read_path: ReadPath) -> None:
    record_ids = [read_path.admit(text) for text in TEXTS]
    read_path.project()
    docs = [FieldDocument(rid, read_path_fields(read_path, rid)) for rid in record_ids]
    _bounded(read_path, 3)
    packets = read_path.search("quokka", limit=10)["output"]["value"]["records"]
    exhaustive = {hit.record_id: hit.score for hit in rank_documents("quokka", docs)}
    expected = rank_top_k("quokka", docs, RankingConfig(postings_per_term=3))
    assert [(p["record"]["record_id"], p["score"]) for p in packets] == [
        (hit.record_id, exhaustive[hit.record_id]) for hit in expected]


def test_df_counters_match_the_postings_through_index_replay_and_forget(
    read_path: ReadPath,
) -> None:
    first = read_path.admit("Quokka zebu shearing retries.")
    read_path.admit("Quokka release train schedule.")
    events = _stream_records(read_path)
    for _ in range(3):
        assert _projector(read_path, events) == {"batchItemFailures": []}
    assert _df_matches_postings(read_path)["quokka"] == 2
    read_path.forget(first)
    read_path.project()
    assert _projector(read_path, events) == {"batchItemFailures": []}
    counters = _df_matches_postings(read_path)
    assert counters["quokka"] == 1
    assert counters["zebu"] == 0


def test_a_crash_before_the_commit_leaves_postings_that_removal_finds_and_uncounts(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit("Quokka crash window note.")
    s = read_path.aws.settings
    store = DynamoProjectionStore(read_path.aws.dynamodb, s.projection_table_name)
    scope = Scope(s.tenant_id, "ws-main")
    analyzed = analyze(FieldDocument(record_id, read_path_fields(read_path, record_id)))
    # The indexing attempt wrote its postings (twice: a retry) and died before the commit.
    store.put_postings(scope, analyzed)
    store.put_postings(scope, analyzed)
    assert _df_matches_postings(read_path)["quokka"] == 1
    assert store.document(scope, record_id) is None
    read_path.forget(record_id)
    read_path.project()
    assert [i for i in _projection_items(read_path) if i["pk"]["S"].startswith("POST#")] == []
    assert _df_matches_postings(read_path)["quokka"] == 0


def test_a_partly_applied_posting_write_completes_without_counting_twice(
    read_path: ReadPath,
) -> None:
    s = read_path.aws.settings
    store = DynamoProjectionStore(read_path.aws.dynamodb, s.projection_table_name)
    scope = Scope(s.tenant_id, "ws-main")
    # Sixty distinct terms: more than one transaction's worth of postings.
    text = " ".join(f"word{i}" for i in range(60))
    whole = analyze(FieldDocument("mem_x", {"primary": text}))
    # An earlier attempt got only part of the way (the same postings, fewer of them).
    first_part = AnalyzedDocument("mem_x", whole.lengths,
                                  {t: f for t, f in whole.frequencies.items() if t < "word3"})
    store.put_postings(scope, first_part)
    store.put_postings(scope, whole)
    counters = _df_matches_postings(read_path)
    assert len(counters) == 60
    assert set(counters.values()) == {1}
    _, dfs = store.term_stats(scope, ["word1", "word59", "absent"])
    assert dfs == {"word1": 1, "word59": 1, "absent": 0}
