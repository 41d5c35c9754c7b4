"""engram_memory_capture through its Lambda handler, on moto."""

from __future__ import annotations

import json

from engram_memory import bootstrap
from engram_memory.domain.canonical import DigestKind, digest
from engram_memory.domain.context import Tool
from engram_memory.domain.instant import format_instant

from tests.fixtures.contract_fixtures import valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    FixedClock,
    admit,
    attribute_blobs,
    call,
    capture,
    code,
    value,
)

SECRET_TEXT = "Deploy with AWS key AKIAIOSFODNN7EXAMPLE and secret wJalrXUtnFEMI/K7MDENG/bPxRfiCY"
NOW_MS = 1_780_000_000_000
DAY_MS = 24 * 3600 * 1000


def _with_retention(retention: dict[str, object], key: str = "capture-key-retention-01"
                    ) -> dict[str, object]:
    args = valid_capture_args(idempotency_key=key)
    args["payload"]["retention"] = retention
    return args


def test_capture_commits_a_pending_candidate_with_a_predicted_record_digest(aws: AwsEnv) -> None:
    result = capture()
    assert result["status"] == "committed_pending"
    assert result["candidate_id"].startswith("cand_")
    assert result["cursor"] == "1"
    expected = digest(DigestKind.TRANSACTION_RECEIPT, {
        "candidate_id": result["candidate_id"], "record_digest": result["record_digest"],
        "cursor": result["cursor"]})
    assert result["transaction_receipt_digest"] == expected


def test_a_replay_returns_duplicate_exact_with_the_same_ids_and_identical_bytes(
        aws: AwsEnv) -> None:
    first = call(Tool.CAPTURE, valid_capture_args())
    second = call(Tool.CAPTURE, valid_capture_args())
    third = call(Tool.CAPTURE, valid_capture_args())
    assert value(second)["status"] == "duplicate_exact"
    assert {**value(second), "status": "committed_pending"} == value(first)
    assert json.dumps(second).encode() == json.dumps(third).encode()
    # Same field order as the first answer, not just the same fields.
    assert list(value(first)) == list(value(second))


def test_the_same_key_with_other_content_is_a_digest_conflict_and_writes_nothing(
        aws: AwsEnv) -> None:
    capture()
    before = aws.scan_all()
    other = call(Tool.CAPTURE, valid_capture_args(text="A different decision entirely."))
    assert code(other) == "DIGEST_CONFLICT"
    assert other["error"]["retriable"] is False
    assert aws.scan_all() == before


def test_a_secret_in_the_text_is_refused_before_anything_is_stored(aws: AwsEnv) -> None:
    envelope = call(Tool.CAPTURE, valid_capture_args(text=SECRET_TEXT))
    assert code(envelope) == "INVALID_SCHEMA"
    assert all(items == [] for items in aws.scan_all().values())


def test_a_secret_in_a_citation_locator_is_refused(aws: AwsEnv) -> None:
    args = valid_capture_args()
    args["payload"]["citations"][1]["locator"]["value"] = "postgres://admin:hunter2pass@db:5432/x"
    assert code(call(Tool.CAPTURE, args)) == "INVALID_SCHEMA"


def test_pending_content_is_stored_only_encrypted(aws: AwsEnv) -> None:
    text = "Unique marker sentence for the encryption check, zebra quartz."
    capture(text=text)
    needle = b"zebra quartz"
    stored = [blob for items in aws.scan_all().values() for item in items
              for blob in attribute_blobs(item)]
    assert stored
    assert not any(needle in blob for blob in stored)


def test_omitted_retention_becomes_make_ineligible_in_the_record(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    record_id = value(admit(cand))["outcome"]["record_id"]
    item = aws.dynamodb.get_item(TableName=aws.settings.table_name, Key={
        "pk": {"S": "SCOPE#tenant-a#ws-main"}, "sk": {"S": f"REC#{record_id}"}})["Item"]
    record = json.loads(item["record_json"]["S"])
    assert record["retention"] == {"derivative_rule": "make-ineligible"}
    assert record["trust_class"] == "asserted"


def test_retain_without_host_permission_is_unauthorized(aws: AwsEnv) -> None:
    envelope = call(Tool.CAPTURE, _with_retention({"derivative_rule": "retain"}))
    assert code(envelope) == "UNAUTHORIZED"
    aws.configure(ENGRAM_RETAIN_ALLOWED="true")
    assert value(call(Tool.CAPTURE, _with_retention({"derivative_rule": "retain"})))


def test_expires_at_must_be_after_capture_time(aws: AwsEnv) -> None:
    bootstrap.override(clock=FixedClock(NOW_MS))
    for at in (NOW_MS, NOW_MS - 1):
        retention = {"derivative_rule": "make-ineligible", "expires_at": format_instant(at)}
        assert code(call(Tool.CAPTURE, _with_retention(retention))) == "INVALID_SCHEMA"
    retention = {"derivative_rule": "make-ineligible", "expires_at": format_instant(NOW_MS + 1)}
    assert value(call(Tool.CAPTURE, _with_retention(retention)))["status"] == "committed_pending"


def test_expires_at_beyond_the_host_ceiling_is_unauthorized(aws: AwsEnv) -> None:
    aws.configure(ENGRAM_RETENTION_CEILING_MS=str(30 * DAY_MS))
    bootstrap.override(clock=FixedClock(NOW_MS))
    beyond = {"derivative_rule": "make-ineligible",
              "expires_at": format_instant(NOW_MS + 30 * DAY_MS + 1)}
    assert code(call(Tool.CAPTURE, _with_retention(beyond))) == "UNAUTHORIZED"
    at_ceiling = {"derivative_rule": "make-ineligible",
                  "expires_at": format_instant(NOW_MS + 30 * DAY_MS)}
    assert value(call(Tool.CAPTURE, _with_retention(at_ceiling)))


def test_a_replay_reuses_the_retention_resolved_at_first_capture(aws: AwsEnv) -> None:
    aws.configure(ENGRAM_RETAIN_ALLOWED="true")
    first = value(call(Tool.CAPTURE, _with_retention({"derivative_rule": "retain"})))
    aws.configure(ENGRAM_RETAIN_ALLOWED="false")
    replay = value(call(Tool.CAPTURE, _with_retention({"derivative_rule": "retain"})))
    assert replay["status"] == "duplicate_exact"
    assert replay["record_digest"] == first["record_digest"]


def test_a_reconciliation_family_needs_host_consent(aws: AwsEnv) -> None:
    args = valid_capture_args()
    args["payload"]["reconciliation"] = {"family_refs": ["family:ingest"]}
    assert code(call(Tool.CAPTURE, args)) == "UNAUTHORIZED"
    aws.configure(ENGRAM_RECONCILIATION_FAMILIES="family:ingest,family:other")
    assert value(call(Tool.CAPTURE, args))["status"] == "committed_pending"


def test_a_purpose_other_than_the_bound_one_is_unauthorized(aws: AwsEnv) -> None:
    envelope = call(Tool.CAPTURE, valid_capture_args(), purpose_ref="purpose:other")
    assert code(envelope) == "UNAUTHORIZED"


def test_capture_marked_for_confirmation_without_one_fails_the_gate(aws: AwsEnv) -> None:
    envelope = call(Tool.CAPTURE, valid_capture_args(), confirmation_required=["capture"])
    assert code(envelope) == "gate_failed"
    assert all(items == [] for items in aws.scan_all().values())


def test_the_same_key_in_another_workspace_is_another_candidate(aws: AwsEnv) -> None:
    here = capture()
    there = capture(workspace_id="ws-other")
    assert there["status"] == "committed_pending"
    assert there["candidate_id"] != here["candidate_id"]
    assert there["record_digest"] != here["record_digest"]


def test_a_large_capture_is_chunked_across_items_and_admitted(aws: AwsEnv) -> None:
    args = valid_capture_args(idempotency_key="capture-key-large-000001")
    words = "ingest queue retry backoff alert dead letter runbook decision "
    component = args["payload"]["components"][1]
    args["payload"]["components"] = [args["payload"]["components"][0]] + [
        {**component, "component_id": f"c-part-{i}", "text": (words * 1000)[:60_000]}
        for i in range(14)
    ]
    cand = value(call(Tool.CAPTURE, args))["candidate_id"]
    blobs = [item for item in aws.scan(aws.settings.table_name)
             if item["sk"]["S"].startswith(f"CAND#{cand}#BLOB#")]
    assert len(blobs) >= 3
    outcome = value(admit(cand))["outcome"]
    assert outcome["status"] == "accepted"
    parts = [item for item in aws.scan(aws.settings.table_name)
             if item["sk"]["S"].startswith(f"REC#{outcome['record_id']}#PART#")]
    assert len(parts) >= 3
