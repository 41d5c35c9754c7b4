"""engram_memory_request_admission (and host adjudication) through the handlers, on moto."""

from __future__ import annotations

import json

from engram_memory.composition import admission
from engram_memory.domain.canonical import record_id_for
from engram_memory.domain.context import Tool
from engram_memory.domain.receipts import decision_receipt_digest, outcome_transaction_digest

from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    SCOPE,
    admit,
    call,
    capture,
    code,
    forget_args,
    install_approval_gate,
    op_digest,
    value,
)

SCOPE_PK = "SCOPE#tenant-a#ws-main"


def _item(aws: AwsEnv, sk: str, table: str | None = None, pk: str = SCOPE_PK) -> dict | None:
    response = aws.dynamodb.get_item(TableName=table or aws.settings.table_name,
                                     Key={"pk": {"S": pk}, "sk": {"S": sk}})
    return response.get("Item")


def _key_item(aws: AwsEnv, cand: str) -> dict | None:
    return _item(aws, f"CAND#{cand}", aws.settings.key_table_name, "KEY#tenant-a#ws-main")


def _blobs(aws: AwsEnv, cand: str) -> list[dict]:
    return [item for item in aws.scan(aws.settings.table_name)
            if item["sk"]["S"].startswith(f"CAND#{cand}#BLOB#")]


def test_acceptance_stores_the_predicted_record_and_shreds_the_candidate(aws: AwsEnv) -> None:
    captured = capture()
    cand = captured["candidate_id"]
    assert _key_item(aws, cand) is not None
    assert _blobs(aws, cand)
    outcome = value(admit(cand))["outcome"]
    assert outcome["status"] == "accepted"
    assert outcome["record_id"] == record_id_for(captured["record_digest"])
    assert outcome["cursor"] == "2"
    assert outcome["transaction_receipt_digest"] == outcome_transaction_digest(outcome)
    record = _item(aws, f"REC#{outcome['record_id']}")
    assert record is not None
    assert record["state"]["S"] == "accepted_current"
    assert record["record_digest"]["S"] == captured["record_digest"]
    assert record["recorded_cursor"]["N"] == "2"
    view = json.loads(record["record_json"]["S"])
    assert view["record_id"] == outcome["record_id"]
    assert view["components"][0]["text"].startswith("Keep three retries")
    assert _key_item(aws, cand) is None
    assert _blobs(aws, cand) == []


def test_the_decision_receipt_is_recomputable_from_the_stored_receipt(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    outcome = value(admit(cand))["outcome"]
    stored = json.loads(_item(aws, f"CAND#{cand}")["decision_receipt"]["S"])
    assert decision_receipt_digest(stored) == outcome["decision_receipt_digest"]
    assert stored["policy_version"] == "1"
    assert stored["bound_policy_version"] == "1"


def test_an_admission_replay_returns_the_same_outcome_marked_replayed(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    first = value(admit(cand))
    again = value(admit(cand))
    assert first["replayed"] is False
    assert again["replayed"] is True
    assert again["outcome"] == first["outcome"]


def test_the_same_admission_key_for_another_candidate_is_a_digest_conflict(aws: AwsEnv) -> None:
    first = capture()["candidate_id"]
    second = capture(text="Another context text.", key="capture-key-0002-ingest")["candidate_id"]
    value(admit(first))
    before = aws.scan_all()
    assert code(admit(second)) == "DIGEST_CONFLICT"
    assert aws.scan_all() == before


def test_unknown_foreign_or_decided_candidates_are_not_found(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    assert code(admit("cand_" + "a" * 52)) == "NOT_FOUND"
    assert code(admit(cand, workspace_id="ws-other")) == "NOT_FOUND"
    value(admit(cand))
    assert code(admit(cand, key="admission-key-0002-ingest")) == "NOT_FOUND"


def test_a_rejecting_policy_rejects_and_shreds(aws: AwsEnv) -> None:
    aws.configure(ENGRAM_ADMISSION_MODE="reject")
    cand = capture()["candidate_id"]
    outcome = value(admit(cand))["outcome"]
    assert outcome["status"] == "rejected"
    assert "record_id" not in outcome
    assert _key_item(aws, cand) is None
    assert _blobs(aws, cand) == []
    assert code(admit(cand, key="admission-key-0002-ingest")) == "NOT_FOUND"


def test_an_adjudicating_policy_leaves_the_candidate_pending_for_the_host(aws: AwsEnv) -> None:
    aws.configure(ENGRAM_ADMISSION_MODE="adjudicate")
    cand = capture()["candidate_id"]
    outcome = value(admit(cand))["outcome"]
    assert outcome["status"] == "pending_adjudication"
    assert _item(aws, f"CAND#{cand}")["state"]["S"] == "pending"
    assert _key_item(aws, cand) is not None
    decided = admission.service().adjudicate(SCOPE, cand, "accept", "host:reviewer")
    assert decided["outcome"]["status"] == "accepted"
    assert _key_item(aws, cand) is None
    again = admission.service().adjudicate(SCOPE, cand, "accept", "host:reviewer")
    assert again["replayed"] is True
    assert again["outcome"] == decided["outcome"]


def test_a_function_running_an_older_policy_than_the_capture_is_policy_stale(
        aws: AwsEnv) -> None:
    aws.configure(ENGRAM_ADMISSION_POLICY_VERSION="2")
    cand = capture()["candidate_id"]
    aws.configure(ENGRAM_ADMISSION_POLICY_VERSION="1")
    envelope = admit(cand)
    assert code(envelope) == "POLICY_STALE"
    assert envelope["error"]["retriable"] is True
    assert _item(aws, f"CAND#{cand}")["state"]["S"] == "pending"


def test_a_candidate_captured_under_an_older_policy_is_decided_by_the_current_one(
        aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    aws.configure(ENGRAM_ADMISSION_POLICY_VERSION="2")
    assert value(admit(cand))["outcome"]["status"] == "accepted"
    stored = json.loads(_item(aws, f"CAND#{cand}")["decision_receipt"]["S"])
    assert (stored["policy_version"], stored["bound_policy_version"]) == ("2", "1")


def test_an_unusable_policy_is_policy_unavailable(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    aws.configure(ENGRAM_ADMISSION_MODE="no-such-mode")
    envelope = admit(cand)
    assert code(envelope) == "POLICY_UNAVAILABLE"
    assert envelope["error"]["retriable"] is True


def test_a_second_candidate_with_the_same_content_is_a_duplicate_of_the_record(
        aws: AwsEnv) -> None:
    first = capture()["candidate_id"]
    second = capture(key="capture-key-0002-same-content")["candidate_id"]
    accepted = value(admit(first))["outcome"]
    duplicate = value(admit(second, key="admission-key-0002-ingest"))["outcome"]
    assert duplicate["status"] == "duplicate_exact"
    assert duplicate["record_id"] == accepted["record_id"]
    assert _key_item(aws, second) is None


def test_forgotten_content_recaptured_is_held_for_adjudication(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    record_id = value(admit(cand))["outcome"]["record_id"]
    args = forget_args(record_id)
    gate.approve(aws.dynamodb, "ref-forget-1", Tool.FORGET, record_id,
                 op_digest(Tool.FORGET, args))
    value(call(Tool.FORGET, args, confirmation_ref="ref-forget-1"))
    recaptured = capture(key="capture-key-0003-recapture")
    assert recaptured["status"] == "committed_pending"
    outcome = value(admit(recaptured["candidate_id"], key="admission-key-0003-ingest"))
    assert outcome["outcome"]["status"] == "pending_adjudication"
    assert "record_id" not in outcome["outcome"]
    aws.configure(ENGRAM_ADMISSION_MODE="reject")
    install_approval_gate(aws.settings.table_name)
    rejected = value(admit(recaptured["candidate_id"], key="admission-key-0004-ingest"))
    assert rejected["outcome"]["status"] == "rejected"


def test_admission_marked_for_confirmation_without_one_fails_the_gate(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    before = aws.scan_all()
    envelope = admit(cand, confirmation_required=["request_admission"])
    assert code(envelope) == "gate_failed"
    assert aws.scan_all() == before
