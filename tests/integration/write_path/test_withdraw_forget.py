"""engram_memory_withdraw and engram_memory_forget (confirmation-gated), on moto."""

from __future__ import annotations

import json

from engram_memory.domain.context import Tool
from engram_memory.domain.receipts import transition_transaction_digest

from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    ApprovalGate,
    admit,
    attribute_blobs,
    call,
    capture,
    code,
    forget_args,
    install_approval_gate,
    op_digest,
    value,
    withdraw_args,
)

SCOPE_PK = "SCOPE#tenant-a#ws-main"


def _approve(aws: AwsEnv, gate: ApprovalGate, tool: Tool, target: str,
             args: dict, ref: str) -> None:
    gate.approve(aws.dynamodb, ref, tool, target, op_digest(tool, args))


def _secret_material(aws: AwsEnv, cand: str) -> list[bytes]:
    """The wrapped key and every ciphertext chunk of a candidate, as stored now."""
    key_item = aws.dynamodb.get_item(TableName=aws.settings.key_table_name, Key={
        "pk": {"S": "KEY#tenant-a#ws-main"}, "sk": {"S": f"CAND#{cand}"}})["Item"]
    chunks = [bytes(item["ct"]["B"]) for item in aws.scan(aws.settings.table_name)
              if item["sk"]["S"].startswith(f"CAND#{cand}#BLOB#")]
    return [bytes(key_item["wrapped"]["B"]), *chunks]


def test_withdraw_without_a_confirmation_fails_the_gate_and_changes_nothing(
        aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    before = aws.scan_all()
    envelope = call(Tool.WITHDRAW, withdraw_args(cand))
    assert code(envelope) == "gate_failed"
    assert aws.scan_all() == before


def test_withdraw_shreds_the_data_key_and_ciphertext_in_every_table(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    material = _secret_material(aws, cand)
    args = withdraw_args(cand)
    _approve(aws, gate, Tool.WITHDRAW, cand, args, "ref-withdraw-1")
    result = value(call(Tool.WITHDRAW, args, confirmation_ref="ref-withdraw-1"))
    assert result["key_destruction"] == "complete"
    assert result["replayed"] is False
    receipt = result["receipt"]
    assert (receipt["operation"], receipt["from_state"], receipt["to_state"]) == (
        "withdraw", "pending", "withdrawn")
    assert receipt["transaction_receipt_digest"] == transition_transaction_digest(receipt)
    stored = [blob for items in aws.scan_all().values() for item in items
              for blob in attribute_blobs(item)]
    for secret in material:
        assert not any(secret in blob for blob in stored)


def test_a_withdraw_replay_needs_no_new_confirmation_and_returns_the_same_receipt(
        aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    args = withdraw_args(cand)
    _approve(aws, gate, Tool.WITHDRAW, cand, args, "ref-withdraw-1")
    first = value(call(Tool.WITHDRAW, args, confirmation_ref="ref-withdraw-1"))
    again = value(call(Tool.WITHDRAW, args))
    assert again["replayed"] is True
    assert again["receipt"] == first["receipt"]


def test_a_withdrawn_candidate_can_never_be_admitted(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    args = withdraw_args(cand)
    _approve(aws, gate, Tool.WITHDRAW, cand, args, "ref-withdraw-1")
    value(call(Tool.WITHDRAW, args, confirmation_ref="ref-withdraw-1"))
    assert code(admit(cand)) == "NOT_FOUND"


def _approved_call(aws: AwsEnv, gate: ApprovalGate, tool: Tool, args: dict,
                   ref: str) -> dict:
    """Call ``tool`` with a human approval of exactly these arguments."""
    target = str(args.get("candidate_id") or args.get("record_id"))
    _approve(aws, gate, tool, target, args, ref)
    return call(tool, args, confirmation_ref=ref)


def _without_audit(envelope: dict) -> dict:
    return {k: v for k, v in envelope.items() if k != "auditId"}


def test_withdraw_reports_unknown_terminal_and_admitted_candidates_to_an_approved_call(
        aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    unknown = withdraw_args("cand_" + "c" * 52)
    assert code(_approved_call(aws, gate, Tool.WITHDRAW, unknown, "ref-w-unknown")
                ) == "NOT_FOUND"
    cand = capture()["candidate_id"]
    assert code(call(Tool.WITHDRAW, withdraw_args(cand), workspace_id="ws-other",
                     confirmation_ref="ref-w-unknown")) == "gate_failed"
    value(_approved_call(aws, gate, Tool.WITHDRAW, withdraw_args(cand), "ref-withdraw-1"))
    again = withdraw_args(cand, key="withdraw-key-0002-ingest")
    assert code(_approved_call(aws, gate, Tool.WITHDRAW, again, "ref-w-again")
                ) == "ALREADY_TERMINAL"
    admitted = capture(text="Admitted content.", key="capture-key-0002-ingest")["candidate_id"]
    value(admit(admitted))
    late = withdraw_args(admitted, key="withdraw-key-0003-ingest")
    assert code(_approved_call(aws, gate, Tool.WITHDRAW, late, "ref-w-late")
                ) == "ILLEGAL_TRANSITION"


def test_an_unapproved_withdraw_cannot_tell_unknown_terminal_and_admitted_apart(
        aws: AwsEnv) -> None:
    # Issue 15 item 2: the state was read before the gate, so these three answered
    # NOT_FOUND, ALREADY_TERMINAL and ILLEGAL_TRANSITION to a call nobody approved.
    gate = install_approval_gate(aws.settings.table_name)
    withdrawn = capture()["candidate_id"]
    value(_approved_call(aws, gate, Tool.WITHDRAW, withdraw_args(withdrawn), "ref-w-1"))
    admitted = capture(text="Admitted content.", key="capture-key-0002-ingest")["candidate_id"]
    value(admit(admitted))
    targets = ("cand_" + "c" * 52, withdrawn, admitted)
    before = aws.scan_all()
    answers = [call(Tool.WITHDRAW, withdraw_args(t, key="withdraw-key-0009-ingest"),
                    confirmation_ref="ref-never-approved") for t in targets]
    assert [code(a) for a in answers] == ["gate_failed"] * 3
    assert len({json.dumps(_without_audit(a)) for a in answers}) == 1
    assert aws.scan_all() == before


def test_a_confirmation_for_another_target_fails_the_gate(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    other = capture(text="Other content.", key="capture-key-0002-ingest")["candidate_id"]
    _approve(aws, gate, Tool.WITHDRAW, other, withdraw_args(other), "ref-withdraw-1")
    before = aws.scan_all()
    envelope = call(Tool.WITHDRAW, withdraw_args(cand), confirmation_ref="ref-withdraw-1")
    assert code(envelope) == "gate_failed"
    assert aws.scan_all() == before


def _admitted_record(aws: AwsEnv) -> str:
    cand = capture()["candidate_id"]
    return str(value(admit(cand))["outcome"]["record_id"])


def test_forget_without_a_confirmation_fails_the_gate(aws: AwsEnv) -> None:
    record_id = _admitted_record(aws)
    before = aws.scan_all()
    assert code(call(Tool.FORGET, forget_args(record_id))) == "gate_failed"
    assert aws.scan_all() == before


def test_forget_tombstones_the_record_and_removes_its_content(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    record_id = _admitted_record(aws)
    args = forget_args(record_id)
    _approve(aws, gate, Tool.FORGET, record_id, args, "ref-forget-1")
    result = value(call(Tool.FORGET, args, confirmation_ref="ref-forget-1"))
    receipt = result["receipt"]
    assert (receipt["operation"], receipt["from_state"], receipt["to_state"]) == (
        "tombstone", "accepted_current", "tombstoned")
    assert result["projection_invalidation"] == "pending"
    assert receipt["transaction_receipt_digest"] == transition_transaction_digest(receipt)
    item = aws.dynamodb.get_item(TableName=aws.settings.table_name, Key={
        "pk": {"S": SCOPE_PK}, "sk": {"S": f"REC#{record_id}"}})["Item"]
    assert item["state"]["S"] == "tombstoned"
    assert item["projection_invalidation"]["S"] == "pending"
    assert "record_json" not in item
    guard = aws.dynamodb.get_item(TableName=aws.settings.table_name, Key={
        "pk": {"S": SCOPE_PK}, "sk": {"S": f"TOMB#{item['payload_digest']['S']}"}})
    assert guard["Item"]["record_id"]["S"] == record_id
    text = b"Keep three retries"
    assert not any(text in blob for items in aws.scan_all().values() for it in items
                   for blob in attribute_blobs(it))


def test_forget_replays_and_refuses_a_second_tombstone(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    record_id = _admitted_record(aws)
    args = forget_args(record_id)
    _approve(aws, gate, Tool.FORGET, record_id, args, "ref-forget-1")
    first = value(call(Tool.FORGET, args, confirmation_ref="ref-forget-1"))
    again = value(call(Tool.FORGET, args))
    assert again["replayed"] is True
    assert json.dumps(again["receipt"]) == json.dumps(first["receipt"])
    second = forget_args(record_id, key="forget-key-0002-ingest")
    assert code(call(Tool.FORGET, second)) == "gate_failed"
    assert code(_approved_call(aws, gate, Tool.FORGET, second, "ref-forget-2")
                ) == "ALREADY_TERMINAL"


def test_forget_of_an_unknown_or_foreign_record_is_not_found_to_an_approved_call(
        aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    record_id = _admitted_record(aws)
    unknown = forget_args("mem_" + "d" * 52)
    assert code(_approved_call(aws, gate, Tool.FORGET, unknown, "ref-f-unknown")
                ) == "NOT_FOUND"
    assert code(call(Tool.FORGET, forget_args(record_id), workspace_id="ws-other")
                ) == "gate_failed"


def test_an_unapproved_forget_cannot_tell_a_tombstoned_record_from_an_unknown_id(
        aws: AwsEnv) -> None:
    # Issue 15 item 2: before, the tombstoned record answered ALREADY_TERMINAL and the
    # unknown id NOT_FOUND, to a call nobody approved.
    gate = install_approval_gate(aws.settings.table_name)
    record_id = _admitted_record(aws)
    value(_approved_call(aws, gate, Tool.FORGET, forget_args(record_id), "ref-f-1"))
    before = aws.scan_all()
    answers = [call(Tool.FORGET, forget_args(target, key="forget-key-0009-ingest"),
                    confirmation_ref="ref-never-approved")
               for target in ("mem_" + "d" * 52, record_id)]
    assert [code(a) for a in answers] == ["gate_failed"] * 2
    assert _without_audit(answers[0]) == _without_audit(answers[1])
    assert aws.scan_all() == before


def test_a_used_confirmation_cannot_be_used_again(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    record_id = _admitted_record(aws)
    args = forget_args(record_id)
    _approve(aws, gate, Tool.FORGET, record_id, args, "ref-forget-1")
    value(call(Tool.FORGET, args, confirmation_ref="ref-forget-1"))
    cand = capture(text="Another one.", key="capture-key-0009-ingest")["candidate_id"]
    other = withdraw_args(cand)
    assert code(call(Tool.WITHDRAW, other, confirmation_ref="ref-forget-1")) == "gate_failed"
