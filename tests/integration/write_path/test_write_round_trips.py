"""withdraw and forget: the approval, then the target, then the commit (issues 16 and 26).

Round trip 1 reads the idempotency item, the journal head and the approval together (one
BatchGetItem); an unapproved call ends there with gate_failed, whatever the target (issue
26 item 2: no read of the target, no commit attempt, so nothing about it in the timing).
An approved call reads its target (round trip 2) and commits (round trip 3); a replay is
answered by round trip 1 alone. Counted with the botocore call hook of bench/aws_calls.py
on the clients the composition root built; these two tools run nothing concurrently, so
their calls ARE their sequential round trips.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.context import Tool

from bench.aws_calls import AwsCallCounter
from tests.fixtures.contract_fixtures import CANDIDATE_ID
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    admit,
    call,
    capture,
    code,
    forget_args,
    install_approval_gate,
    op_digest,
    value,
    withdraw_args,
)

FLOOR = Counter({"dynamodb.BatchGetItem": 2, "dynamodb.TransactWriteItems": 1})


def _calls(run: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], Counter[str]]:
    counter = AwsCallCounter().attach([bootstrap.dynamodb_client(), bootstrap.kms_client()])
    try:
        with counter.measure() as block:
            envelope = run()
    finally:
        counter.detach()
    return envelope, block.calls


def test_withdraw_reads_once_then_commits(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture()["candidate_id"]
    args = withdraw_args(cand)
    gate.approve(aws.dynamodb, "ref-w-1", Tool.WITHDRAW, cand, op_digest(Tool.WITHDRAW, args))
    envelope, calls = _calls(lambda: call(Tool.WITHDRAW, args, confirmation_ref="ref-w-1"))
    assert value(envelope)["receipt"]["to_state"] == "withdrawn"
    assert calls == FLOOR
    # A replay is answered by the same single read, with no commit.
    envelope, calls = _calls(lambda: call(Tool.WITHDRAW, args))
    assert value(envelope)["replayed"] is True
    assert calls == Counter({"dynamodb.BatchGetItem": 1})


def test_forget_reads_once_then_commits(aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    record_id = value(admit(capture()["candidate_id"]))["outcome"]["record_id"]
    args = forget_args(record_id)
    gate.approve(aws.dynamodb, "ref-f-1", Tool.FORGET, record_id, op_digest(Tool.FORGET, args))
    envelope, calls = _calls(lambda: call(Tool.FORGET, args, confirmation_ref="ref-f-1"))
    assert value(envelope)["receipt"]["to_state"] == "tombstoned"
    assert calls == FLOOR


def test_an_unapproved_withdraw_of_an_unknown_id_still_answers_gate_failed(
        aws: AwsEnv) -> None:
    install_approval_gate(aws.settings.table_name)
    assert code(call(Tool.WITHDRAW, withdraw_args(CANDIDATE_ID))) == "gate_failed"


def test_an_unapproved_forget_reads_once_and_never_its_target(aws: AwsEnv) -> None:
    install_approval_gate(aws.settings.table_name)
    record_id = value(admit(capture()["candidate_id"]))["outcome"]["record_id"]
    envelope, calls = _calls(lambda: call(Tool.FORGET, forget_args(record_id),
                                          confirmation_ref="ref-nobody-approved"))
    assert code(envelope) == "gate_failed"
    assert calls == Counter({"dynamodb.BatchGetItem": 1})
