"""Search reads at most K postings per term; df counters stay exact through every write path."""

from __future__ import annotations

import json
from typing import Any

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb import projection_store
from engram_memory.adapters.dynamodb.posting_writer import block_bytes
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore
from engram_memory.composition import search as composition_search
from engram_memory.domain.context import Scope
from engram_memory.domain.impact import score_top_k
from engram_memory.domain.posting_blocks import decode
from engram_memory.domain.ranking import (
    AnalyzedDocument,
    FieldDocument,
    RankingConfig,
    ScoredRecord,
    analyze,
    build_index,
    rank_documents,
)
from engram_memory.domain.search_fields import record_document
from engram_memory.domain.tokenizer import query_terms

from tests.integration.read_path.conftest import ReadPath, ids
from tests.integration.read_path.test_projector import _projector, _stream_records
from tests.support.posting_blocks import postings_by_term

# Record n says "quokka" n times in its primary text: impact rises with n.
TEXTS = [("quokka " * n) + f"filler{n} " * (8 - n) for n in range(1, 8)]


def _budget_only(query: str, docs: list[FieldDocument],
                 config: RankingConfig) -> list[ScoredRecord]:
    """Each term's best postings within the budget, scored over an index of ``docs``."""
    postings, stats = build_index(docs)
    return score_top_k(query_terms(query), postings, stats, config)


def _projection_items(read_path: ReadPath) -> list[dict[str, Any]]:
    return read_path.aws.scan(read_path.aws.settings.projection_table_name)


def _df_matches_postings(read_path: ReadPath) -> dict[str, int]:
    """Assert every df counter equals its term's posting count; return the counters."""
    items = _projection_items(read_path)
    postings = {term: len(ids) for term, ids in postings_by_term(items).items()}
    counters = {i["pk"]["S"].rsplit("#", 1)[1]: int(i["df"]["N"]) for i in items
                if i["pk"]["S"].startswith("DF#")}
    assert {t: n for t, n in counters.items() if n} == postings
    return counters


def _query_sizes(read_path: ReadPath) -> list[int]:
    """Record how many postings each Query of the search client returns."""
    sizes: list[int] = []

    def after(parsed: dict[str, Any], **_: Any) -> None:
        sizes.append(sum(len(decode(block_bytes(i))) for i in parsed.get("Items", [])))

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
    # One Query of whole blocks (the top bands, tests/integration/read_path/
    # test_posting_blocks.py); only the best 3 of what it read are candidates.
    assert len(sizes) == 1
    assert sizes[0] >= 3
    assert envelope["output"]["value"]["rank_receipt"]["candidate_count"] == 3


def test_bounded_scores_equal_bm25f_over_the_whole_scope(read_path: ReadPath) -> None:
    record_ids = [read_path.admit(text) for text in TEXTS]
    read_path.project()
    docs = [FieldDocument(rid, read_path_fields(read_path, rid)) for rid in record_ids]
    _bounded(read_path, 3)
    packets = read_path.search("quokka", limit=10)["output"]["value"]["records"]
    exhaustive = {hit.record_id: hit.score for hit in rank_documents("quokka", docs)}
    expected = _budget_only("quokka", docs, RankingConfig(postings_per_term=3))
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
    assert postings_by_term(_projection_items(read_path)) == {}
    assert _df_matches_postings(read_path)["quokka"] == 0
    # Nor is its term list (the forgotten content's terms and frequencies) left behind.
    assert not [i for i in _projection_items(read_path) if i["sk"]["S"].startswith(record_id)]


def test_removal_finds_every_chunk_of_a_term_list_whatever_the_doc_item_counted(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    # A list cut into more chunks than the doc item says (another release cutting chunks
    # differently, or a retried attempt): removal still finds and deletes all of them.
    monkeypatch.setattr(projection_store, "_CHUNK_BYTES", 40)
    record_id = read_path.admit("Quokka wallaby numbat bilby dingo echidna platypus note.")
    read_path.project()
    s = read_path.aws.settings
    chunks = [i for i in _projection_items(read_path) if i["sk"]["S"].startswith(f"{record_id}#T#")]
    assert len(chunks) > 1
    table = s.projection_table_name
    read_path.aws.dynamodb.update_item(
        TableName=table, Key={"pk": chunks[0]["pk"], "sk": {"S": record_id}},
        UpdateExpression="SET chunks = :one", ExpressionAttributeValues={":one": {"N": "1"}})
    read_path.forget(record_id)
    read_path.project()
    assert postings_by_term(_projection_items(read_path)) == {}
    assert not [i for i in _projection_items(read_path) if i["sk"]["S"].startswith(record_id)
                and "#T#" in i["sk"]["S"]]


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


# Query "alpha beta" with 2 postings read per term. TARGET holds both terms, but it is
# among the best 2 postings of "alpha" only; its "beta" posting ranks below both BETA ones.
ALPHA_TOP = "alpha alpha alpha one"
TARGET = "alpha alpha beta"
ALPHA_LOW = "alpha filler filler filler filler filler filler"
BETA = ["beta beta beta two", "beta beta beta three"]


def _completion_config(monkeypatch: Any, read_path: ReadPath, cap: int) -> RankingConfig:
    config = RankingConfig(postings_per_term=2, completion_cap=cap)
    monkeypatch.setattr(composition_search, "ranking_config", lambda _settings: config)
    read_path.rewire()
    return config


def _record_keys_read(read_path: ReadPath) -> list[str]:
    """Record item keys (main table) each BatchGetItem of the search client asks for."""
    table = read_path.aws.settings.table_name
    keys: list[str] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        keys.extend(k["sk"]["S"] for k in params["RequestItems"].get(table, {}).get("Keys", [])
                    if k["sk"]["S"].startswith("REC#"))

    bootstrap.dynamodb_client().meta.events.register(
        "before-parameter-build.dynamodb.BatchGetItem", before)
    return keys


def test_a_record_found_through_one_term_is_ranked_by_its_exact_score(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    texts = [ALPHA_TOP, TARGET, ALPHA_LOW, *BETA]
    record_ids = [read_path.admit(text) for text in texts]
    read_path.project()
    target = record_ids[1]
    config = _completion_config(monkeypatch, read_path, cap=200)
    docs = [FieldDocument(rid, read_path_fields(read_path, rid)) for rid in record_ids]
    exhaustive = rank_documents("alpha beta", docs)
    budget_only = _budget_only("alpha beta", docs, config)
    # The setting: exhaustive BM25F ranks the target first; the budget's postings alone do not.
    assert exhaustive[0].record_id == target
    assert budget_only[0].record_id != target

    packets = read_path.search("alpha beta", limit=10)["output"]["value"]["records"]

    # Every candidate (ALPHA_LOW is not one: outside alpha's best 2) with its exact score,
    # in the exhaustive order.
    candidates = {hit.record_id for hit in budget_only}
    assert [(p["record"]["record_id"], p["score"]) for p in packets] == [
        (hit.record_id, hit.score) for hit in exhaustive if hit.record_id in candidates]


def test_completion_reads_at_most_its_cap_of_records_and_the_rest_keep_partial_scores(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    texts = [ALPHA_TOP, TARGET, ALPHA_LOW, *BETA]
    record_ids = [read_path.admit(text) for text in texts]
    read_path.project()
    target = record_ids[1]
    config = _completion_config(monkeypatch, read_path, cap=1)
    docs = [FieldDocument(rid, read_path_fields(read_path, rid)) for rid in record_ids]
    budget_only = _budget_only("alpha beta", docs, config)
    keys = _record_keys_read(read_path)

    packets = read_path.search("alpha beta", limit=1)["output"]["value"]["records"]

    # One record completed (the best by partial score, already exact), none other: the
    # target keeps its partial score and the page is the budget's own top.
    assert [p["record"]["record_id"] for p in packets] == [budget_only[0].record_id]
    assert target != budget_only[0].record_id
    # Completion read 1 record; revalidation read only the page (+1) it had not read yet.
    assert len(keys) <= config.completion_cap + 2


def _term_list_keys_read(read_path: ReadPath) -> list[str]:
    """Term-list item keys (projection table) each BatchGetItem of the search client asks for."""
    table = read_path.aws.settings.projection_table_name
    keys: list[str] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        keys.extend(k["sk"]["S"] for k in params["RequestItems"].get(table, {}).get("Keys", [])
                    if "#T#" in k["sk"]["S"])

    bootstrap.dynamodb_client().meta.events.register(
        "before-parameter-build.dynamodb.BatchGetItem", before)
    return keys


def _exact_among_candidates(read_path: ReadPath, record_ids: list[str],
                            config: RankingConfig) -> list[tuple[str, float]]:
    docs = [FieldDocument(rid, read_path_fields(read_path, rid)) for rid in record_ids]
    candidates = {hit.record_id for hit in _budget_only("alpha beta", docs, config)}
    return [(hit.record_id, hit.score) for hit in rank_documents("alpha beta", docs)
            if hit.record_id in candidates]


def _scored(envelope: dict[str, Any]) -> list[tuple[str, float]]:
    return [(p["record"]["record_id"], p["score"]) for p in envelope["output"]["value"]["records"]]


def test_completion_reads_term_lists_not_records_when_they_hold_frequencies(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    record_ids = [read_path.admit(text) for text in [ALPHA_TOP, TARGET, ALPHA_LOW, *BETA]]
    read_path.project()
    config = _completion_config(monkeypatch, read_path, cap=200)
    record_keys = _record_keys_read(read_path)
    term_list_keys = _term_list_keys_read(read_path)

    envelope = read_path.search("alpha beta", limit=10)

    # Exact scores, with no record item read for completion: the ones read are
    # revalidation's (one consistent read of the page's candidates), each once.
    assert _scored(envelope) == _exact_among_candidates(read_path, record_ids, config)
    assert len(record_keys) == len(set(record_keys))
    # The candidates lacking an open term's posting (the target among them), each read
    # from its term list.
    assert f"{record_ids[1]}#T#0000" in term_list_keys
    assert {k.partition("#")[0] for k in term_list_keys} <= set(record_ids)
    assert all(k.endswith("#T#0000") for k in term_list_keys)


def test_term_lists_without_frequencies_are_completed_from_content(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    record_ids = [read_path.admit(text) for text in [ALPHA_TOP, TARGET, ALPHA_LOW, *BETA]]
    read_path.project()
    # Term lists as a release before stored frequencies wrote them: terms only.
    table = read_path.aws.settings.projection_table_name
    for item in _projection_items(read_path):
        if "#T#" in item["sk"]["S"]:
            read_path.aws.dynamodb.update_item(
                TableName=table, Key={"pk": item["pk"], "sk": item["sk"]},
                UpdateExpression="REMOVE f, #l", ExpressionAttributeNames={"#l": "len"})
    config = _completion_config(monkeypatch, read_path, cap=200)
    record_keys = _record_keys_read(read_path)

    envelope = read_path.search("alpha beta", limit=10)

    assert _scored(envelope) == _exact_among_candidates(read_path, record_ids, config)
    # Completion read record items (then revalidation read the page again).
    assert len(record_keys) > len(set(record_keys))


def test_a_record_not_projected_yet_is_completed_from_its_content(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    # The target arrives after the others were projected: it is in the journal tail only.
    record_ids = [read_path.admit(text) for text in [ALPHA_TOP, ALPHA_LOW, *BETA]]
    read_path.project()
    record_ids.insert(1, read_path.admit(TARGET))
    config = _completion_config(monkeypatch, read_path, cap=200)

    record_keys = _record_keys_read(read_path)
    term_list_keys = _term_list_keys_read(read_path)

    envelope = read_path.search("alpha beta", limit=10)

    assert _scored(envelope) == _exact_among_candidates(read_path, record_ids, config)
    assert _scored(envelope)[0][0] == record_ids[1]
    # Completed from what the journal tail's read already analyzed: neither its term list
    # nor its record read again for completion (the tail's read and revalidation's only).
    assert not [k for k in term_list_keys if k.startswith(record_ids[1])]
    assert record_keys.count(f"REC#{record_ids[1]}") == 2


def test_a_term_list_of_several_chunks_is_completed_from_content(
    read_path: ReadPath, monkeypatch: Any,
) -> None:
    monkeypatch.setattr(projection_store, "_CHUNK_BYTES", 12)
    record_ids = [read_path.admit(text) for text in [ALPHA_TOP, TARGET, ALPHA_LOW, *BETA]]
    read_path.project()
    config = _completion_config(monkeypatch, read_path, cap=200)
    record_keys = _record_keys_read(read_path)

    envelope = read_path.search("alpha beta", limit=10)

    assert _scored(envelope) == _exact_among_candidates(read_path, record_ids, config)
    assert f"REC#{record_ids[1]}" in record_keys


def test_completion_documents_say_each_term_frequency_as_indexed(
    read_path: ReadPath,
) -> None:
    # Terms that are prefixes of one another, and one the record does not hold.
    texts = ["alpha alphabet alphabets alp beta", "alphabet alphabet gamma", "zeta"]
    record_ids = [read_path.admit(text) for text in texts]
    read_path.project()
    s = read_path.aws.settings
    store = DynamoProjectionStore(read_path.aws.dynamodb, s.projection_table_name)
    terms = query_terms("alpha alphabet alphabets alp beta gamma zeta omega")

    found = store.completion_documents(Scope(s.tenant_id, "ws-main"), record_ids, terms,
                                       consistent=True)

    for rid in record_ids:
        analyzed = analyze(FieldDocument(rid, read_path_fields(read_path, rid)))
        assert found[rid] == AnalyzedDocument(
            rid, analyzed.lengths,
            {t: tf for t, tf in analyzed.frequencies.items() if t in terms})
