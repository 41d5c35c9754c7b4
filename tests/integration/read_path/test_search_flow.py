from __future__ import annotations

from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.instant import format_instant

from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.support.posting_blocks import postings_by_term

DAY_MS = 24 * 3600 * 1000


def test_an_admitted_record_is_found_by_search_with_its_citations(read_path: ReadPath) -> None:
    record_id = read_path.admit("The ingest queue retries three times with exponential backoff.")
    read_path.project()
    envelope = read_path.search("exponential backoff ingest")
    assert ids(envelope) == [record_id]
    packet = envelope["output"]["value"]["records"][0]
    assert packet["rank"] == 1
    assert packet["score"] > 0
    assert {c["source_ref"] for c in packet["record"]["citations"]} == {"repo:platform", "wiki:ops"}


def test_a_record_is_found_by_its_citation_locator(read_path: ReadPath) -> None:
    record_id = read_path.admit("Quarterly capacity review notes.")
    read_path.project()
    assert ids(read_path.search("runbooks")) == [record_id]


def test_a_search_without_any_match_is_an_empty_success(read_path: ReadPath) -> None:
    read_path.admit("Alpha release checklist.")
    read_path.project()
    envelope = read_path.search("zeppelin")
    assert ids(envelope) == []
    assert "next_page_cursor" not in envelope["output"]["value"]


def test_a_pending_candidate_never_reaches_the_projection_or_search(read_path: ReadPath) -> None:
    captured = read_path.call_capture_only("Kestrel migration is pending review.")
    assert captured["ok"]
    assert ids(read_path.search("kestrel migration")) == []  # not even through the tail
    read_path.project()
    # Nothing but the watermark, which passed the capture event.
    items = read_path.aws.scan(read_path.aws.settings.projection_table_name)
    assert [set(item) for item in items] == [{"pk", "sk", "wm"}]
    assert items[0]["pk"]["S"].startswith("STATS#")
    assert ids(read_path.search("kestrel migration")) == []


def test_a_forgotten_record_disappears_from_search_and_get_before_the_projector_runs(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit("Osprey cluster uses spot instances for batch jobs.")
    read_path.project()
    assert ids(read_path.search("osprey spot")) == [record_id]
    forgotten = read_path.forget(record_id)
    assert forgotten["output"]["value"]["projection_invalidation"] == "pending"
    # The projector has not run: the postings are still there, revalidation hides them.
    assert ids(read_path.search("osprey spot")) == []
    assert error_code(read_path.get(record_id)) == "NOT_FOUND"
    read_path.project()
    assert postings_by_term(read_path.aws.scan(
        read_path.aws.settings.projection_table_name)) == {}  # (empty head blocks may stay)
    item = read_path.record_item(record_id)
    assert item["projection_invalidation"]["S"] == "complete"


def test_a_record_whose_valid_time_ended_is_never_returned(read_path: ReadPath) -> None:
    t = read_path.clock.now - 10 * DAY_MS
    record_id = read_path.admit(
        "Heron gateway timeout is 29 seconds.", valid_time={"t": t, "t_end": t + 5 * DAY_MS},
    )
    read_path.project()
    assert ids(read_path.search("heron gateway")) == []
    assert error_code(read_path.get(record_id)) == "NOT_FOUND"


def test_valid_time_bounds_are_inclusive(read_path: ReadPath) -> None:
    now = read_path.clock.now
    record_id = read_path.admit("Ibis cache warms at boot.", valid_time={"t": now, "t_end": now})
    read_path.project()
    assert ids(read_path.search("ibis cache")) == [record_id]
    read_path.clock.now = now + 1
    assert ids(read_path.search("ibis cache")) == []
    read_path.clock.now = now - 1
    assert error_code(read_path.get(record_id)) == "NOT_FOUND"


def test_a_record_past_its_expires_at_is_never_returned(read_path: ReadPath) -> None:
    expires = read_path.clock.now + DAY_MS
    record_id = read_path.admit(
        "Jackal feature flag is temporary.",
        retention={"derivative_rule": "make-ineligible", "expires_at": format_instant(expires)},
    )
    read_path.project()
    read_path.clock.now = expires - 1
    assert ids(read_path.search("jackal flag")) == [record_id]
    assert read_path.get(record_id)["ok"]
    read_path.clock.now = expires
    assert ids(read_path.search("jackal flag")) == []
    assert error_code(read_path.get(record_id)) == "NOT_FOUND"


def test_the_primary_field_outweighs_the_same_word_in_context(read_path: ReadPath) -> None:
    in_context = read_path.admit("Lynx dashboards live in Grafana.")
    in_primary = read_path.admit("Ops notes.", decision_text="Adopt lynx for tracing.")
    read_path.project()
    assert ids(read_path.search("lynx")) == [in_primary, in_context]


def test_a_semantic_requirement_without_a_channel_is_capability_unavailable(
    read_path: ReadPath,
) -> None:
    read_path.admit("Marten backups run nightly.")
    read_path.project()
    policy = {"minimum_channels": "lexical_and_semantic", "network": "allow"}
    envelope = read_path.search("marten backups", capability_policy=policy)
    # Not retriable: no semantic channel is configured here, so a retry would loop.
    assert error_code(envelope) == "CAPABILITY_UNAVAILABLE"
    assert envelope["error"]["retriable"] is False


def test_network_allow_alone_grants_nothing_and_still_searches_lexically(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit("Narwhal ingest is sharded by tenant.")
    read_path.project()
    policy = {"minimum_channels": "lexical", "network": "allow"}
    assert ids(read_path.search("narwhal sharded", capability_policy=policy)) == [record_id]


def test_an_unreachable_projection_is_an_error_never_an_empty_success(
    read_path: ReadPath,
) -> None:
    read_path.admit("Ocelot queue depth alarm.")
    read_path.project()
    read_path.aws.dynamodb.delete_table(TableName=read_path.aws.settings.projection_table_name)
    envelope = read_path.search("ocelot alarm")
    assert error_code(envelope) == "STORE_UNAVAILABLE"
    assert "ocelot" not in str(envelope).lower()


def test_a_purpose_other_than_the_bound_one_is_refused(read_path: ReadPath) -> None:
    envelope = read_path.call_search_with_purpose("anything", "purpose:other")
    assert error_code(envelope) == "UNAUTHORIZED"


def test_every_receipt_digest_is_recomputable_from_the_response(read_path: ReadPath) -> None:
    read_path.admit("Puffin deploys are blue-green.")
    read_path.admit("Puffin rollback takes five minutes.")
    read_path.project()
    value = read_path.search("puffin")["output"]["value"]
    receipt = value["rank_receipt"]
    body = {k: v for k, v in receipt.items() if k != "receipt_digest"}
    assert receipt["receipt_digest"] == digest(DigestKind.RANK_RECEIPT, body)
    ordered = [p["record"]["record_id"] for p in value["records"]]
    assert receipt["ordered_ids_digest"] == digest(DigestKind.ORDERED_IDS, ordered)
    assert receipt["candidate_count"] == 2
    assert receipt["valid_as_of"] == format_instant(read_path.clock.now)
    rest = {k: v for k, v in value.items() if k != "response_digest"}
    assert value["response_digest"] == digest(DigestKind.RESPONSE, rest)
    for packet in value["records"]:
        subject = {"record": packet["record"], "redacted_fields": packet["redacted_fields"]}
        assert packet["redaction_receipt_digest"] == digest(DigestKind.REDACTION_RECEIPT, subject)
