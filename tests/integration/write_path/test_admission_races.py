"""Admission under races, non-current duplicates and SDK-resent commits, on moto."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.retries.standard import ExponentialBackoff
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.composition import admission
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import IllegalTransition

from tests.fixtures.contract_fixtures import valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    SCOPE,
    admit,
    call,
    capture,
    code,
    install_approval_gate,
    op_digest,
    value,
    withdraw_args,
)

SCOPE_PK = "SCOPE#tenant-a#ws-main"
COMMIT_TARGET = b"DynamoDB_20120810.TransactWriteItems"


def _store(aws: AwsEnv) -> DynamoMemoryStore:
    return DynamoMemoryStore(aws.dynamodb, aws.settings.table_name, aws.settings.key_table_name)


def _candidate(aws: AwsEnv, cand: str) -> dict[str, Any]:
    return dict(aws.dynamodb.get_item(TableName=aws.settings.table_name, ConsistentRead=True,
                                      Key={"pk": {"S": SCOPE_PK},
                                           "sk": {"S": f"CAND#{cand}"}})["Item"])


def _blob_keys(aws: AwsEnv, cand: str) -> list[dict[str, Any]]:
    return [{"pk": item["pk"], "sk": item["sk"]} for item in aws.scan(aws.settings.table_name)
            if item["sk"]["S"].startswith(f"CAND#{cand}#BLOB#")]


def _expire(aws: AwsEnv, record_id: str) -> None:
    """Set the record's state as the expiry sweeper leaves it (content kept)."""
    aws.dynamodb.update_item(
        TableName=aws.settings.table_name,
        Key={"pk": {"S": SCOPE_PK}, "sk": {"S": f"REC#{record_id}"}},
        UpdateExpression="SET #s = :expired", ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":expired": {"S": "expired"}})


def test_an_admission_overtaken_by_a_withdraw_between_its_reads_is_not_found(
        aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    args = withdraw_args(cand)
    gate.approve(aws.dynamodb, "ref-w", Tool.WITHDRAW, cand, op_digest(Tool.WITHDRAW, args))
    withdrawn: list[dict[str, Any]] = []

    def overtake(params: dict[str, Any], **_: Any) -> None:
        # The withdraw commits after the admission read the candidate, its wrapped key and
        # its ciphertext (one batch), while it reads the record and the tombstone guard.
        sort_keys = [key["sk"]["S"] for table in params["RequestItems"].values()
                     for key in table["Keys"]]
        if not withdrawn and any(sk.startswith("TOMB#") for sk in sort_keys):
            withdrawn.append(call(Tool.WITHDRAW, args, confirmation_ref="ref-w"))

    bootstrap.dynamodb_client().meta.events.register(
        "before-parameter-build.dynamodb.BatchGetItem", overtake)
    envelope = admit(cand)
    assert withdrawn
    assert value(withdrawn[0])["receipt"]["to_state"] == "withdrawn"
    assert code(envelope) == "NOT_FOUND"
    assert envelope["error"]["retriable"] is False


def test_a_still_pending_candidate_whose_chunks_are_gone_is_blob_missing(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    for key in _blob_keys(aws, cand):
        aws.dynamodb.delete_item(TableName=aws.settings.table_name, Key=key)
    assert code(admit(cand)) == "BLOB_MISSING"


def test_content_whose_record_expired_is_held_not_reported_as_a_duplicate(
        aws: AwsEnv) -> None:
    first = capture()["candidate_id"]
    record_id = value(admit(first))["outcome"]["record_id"]
    _expire(aws, record_id)
    again = capture(key="capture-key-0002-again")["candidate_id"]
    outcome = value(admit(again, key="admission-key-0002-again"))["outcome"]
    assert outcome["status"] == "pending_adjudication"
    assert "record_id" not in outcome
    assert _candidate(aws, again)["state"]["S"] == "pending"
    assert _blob_keys(aws, again)
    last = _store(aws).journal_events(SCOPE)[-1].body
    assert (last["operation"], last["to_state"]) == ("hold", "pending")
    record = aws.dynamodb.get_item(TableName=aws.settings.table_name, Key={
        "pk": {"S": SCOPE_PK}, "sk": {"S": f"REC#{record_id}"}})["Item"]
    assert record["state"]["S"] == "expired"


def test_the_host_cannot_accept_content_whose_record_expired(aws: AwsEnv) -> None:
    record_id = value(admit(capture()["candidate_id"]))["outcome"]["record_id"]
    _expire(aws, record_id)
    again = capture(key="capture-key-0002-again")["candidate_id"]
    with pytest.raises(IllegalTransition):
        admission.service().adjudicate(SCOPE, again, "accept", "approver-1")
    assert _candidate(aws, again)["state"]["S"] == "pending"
    rejected = admission.service().adjudicate(SCOPE, again, "reject", "approver-1")
    assert rejected["outcome"]["status"] == "rejected"


def test_content_whose_record_is_current_is_still_a_duplicate(aws: AwsEnv) -> None:
    record_id = value(admit(capture()["candidate_id"]))["outcome"]["record_id"]
    again = capture(key="capture-key-0002-again")["candidate_id"]
    outcome = value(admit(again, key="admission-key-0002-again"))["outcome"]
    assert (outcome["status"], outcome["record_id"]) == ("duplicate_exact", record_id)


@pytest.fixture
def lose_next_commit_answer(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[int]]:
    """Arms: the next TransactWriteItems reaches moto and commits; its answer times out.

    Registered last on ``before-send``, after moto's stubber has applied the request, so
    botocore's own retry loop resends it (with no back-off delay).
    """
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)

    def arm() -> list[int]:
        fired: list[int] = []

        def lose_answer(request: Any, **_: Any) -> None:
            if not fired and request.headers.get("X-Amz-Target") == COMMIT_TARGET:
                fired.append(1)
                raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

        bootstrap.dynamodb_client().meta.events.register_last("before-send", lose_answer)
        return fired

    return arm


def test_an_admission_the_sdk_resent_after_a_lost_answer_is_outcome_unknown(
        aws: AwsEnv, lose_next_commit_answer: Callable[[], list[int]]) -> None:
    cand = capture()["candidate_id"]
    fired = lose_next_commit_answer()
    first = admit(cand)
    assert fired == [1]
    assert code(first) == "MUTATION_OUTCOME_UNKNOWN"
    assert first["error"]["retriable"] is True
    retry = value(admit(cand))
    assert retry["replayed"] is True
    assert retry["outcome"]["status"] == "accepted"
    operations = [e.body["operation"] for e in _store(aws).journal_events(SCOPE)]
    assert operations == ["capture", "accept"]


def test_a_capture_the_sdk_resent_after_a_lost_answer_is_outcome_unknown(
        aws: AwsEnv, lose_next_commit_answer: Callable[[], list[int]]) -> None:
    fired = lose_next_commit_answer()
    lost = call(Tool.CAPTURE, valid_capture_args())
    assert fired == [1]
    assert code(lost) == "MUTATION_OUTCOME_UNKNOWN"
    retry = value(call(Tool.CAPTURE, valid_capture_args()))
    assert retry["status"] == "duplicate_exact"
    assert retry["cursor"] == "1"
    assert len(_store(aws).journal_events(SCOPE)) == 1
