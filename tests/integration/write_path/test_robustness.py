"""Concurrency, journal integrity, injected faults, the runner's refusals, and logs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from engram_memory import bootstrap, runtime
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.domain.context import Tool
from engram_memory.domain.journal import verify_chain

from functions.capture.handler import lambda_handler as capture_handler
from tests.fixtures.contract_fixtures import valid_capture_args
from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import (
    SCOPE,
    admit,
    call,
    capture,
    code,
    forget_args,
    install_approval_gate,
    lambda_context,
    op_digest,
    value,
    withdraw_args,
)

EVENTS = Path(__file__).resolve().parents[2] / "events"
MARKER = "Quokka-lattice-7731 is the unique marker of this capture"


def _store(aws: AwsEnv) -> DynamoMemoryStore:
    return DynamoMemoryStore(aws.dynamodb, aws.settings.table_name, aws.settings.key_table_name)


def _inject(event_name: str, error: Exception) -> list[int]:
    """Raise ``error`` once from a botocore hook on the wired DynamoDB client."""
    fired: list[int] = []

    def hook(**_: Any) -> None:
        if not fired:
            fired.append(1)
            raise error

    bootstrap.dynamodb_client().meta.events.register(event_name, hook)
    return fired


def test_twenty_concurrent_captures_with_one_key_commit_exactly_once(aws: AwsEnv) -> None:
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: call(Tool.CAPTURE, valid_capture_args()), range(20)))
    values = [value(r) for r in results]
    assert sorted(v["status"] for v in values).count("committed_pending") == 1
    assert len({json.dumps({**v, "status": ""}) for v in values}) == 1
    candidates = [item for item in aws.scan(aws.settings.table_name)
                  if item["sk"]["S"].startswith("CAND#") and "#BLOB#" not in item["sk"]["S"]]
    assert len(candidates) == 1
    assert len(_store(aws).journal_events(SCOPE)) == 1
    assert len(aws.scan(aws.settings.key_table_name)) == 1


def test_the_journal_is_gap_free_and_its_chain_verifies_after_a_mixed_workload(
        aws: AwsEnv) -> None:
    gate = install_approval_gate(aws.settings.table_name)
    first = capture()["candidate_id"]
    capture()  # replay: no event
    second = capture(text="Second context.", key="capture-key-0002-ingest")["candidate_id"]
    third = capture(text="Third context.", key="capture-key-0003-ingest")["candidate_id"]
    record_id = value(admit(first))["outcome"]["record_id"]
    admit(first)  # replay
    code(call(Tool.CAPTURE, valid_capture_args(text="conflict")))  # DIGEST_CONFLICT
    w_args = withdraw_args(second)
    gate.approve(aws.dynamodb, "ref-w", Tool.WITHDRAW, second, op_digest(Tool.WITHDRAW, w_args))
    value(call(Tool.WITHDRAW, w_args, confirmation_ref="ref-w"))
    f_args = forget_args(record_id)
    gate.approve(aws.dynamodb, "ref-f", Tool.FORGET, record_id, op_digest(Tool.FORGET, f_args))
    value(call(Tool.FORGET, f_args, confirmation_ref="ref-f"))
    aws.configure(ENGRAM_ADMISSION_MODE="reject")
    value(admit(third, key="admission-key-0003-ingest"))
    events = _store(aws).journal_events(SCOPE)
    head = verify_chain(events)
    assert [e.cursor for e in events] == list(range(1, 8))
    assert head == _store(aws).journal_head(SCOPE)
    assert [e.body["operation"] for e in events] == [
        "capture", "capture", "capture", "accept", "withdraw", "tombstone", "reject"]
    assert not any("context" in json.dumps(e.body).lower() for e in events)


def test_a_fault_after_the_commit_is_outcome_unknown_and_the_retry_returns_the_result(
        aws: AwsEnv) -> None:
    fired = _inject("after-call.dynamodb.TransactWriteItems",
                    ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"))
    lost = call(Tool.CAPTURE, valid_capture_args())
    assert fired == [1]
    assert code(lost) == "MUTATION_OUTCOME_UNKNOWN"
    assert lost["error"]["retriable"] is True
    retry = value(call(Tool.CAPTURE, valid_capture_args()))
    assert retry["status"] == "duplicate_exact"
    assert retry["cursor"] == "1"
    assert len(_store(aws).journal_events(SCOPE)) == 1


def test_an_admission_whose_commit_answer_was_lost_replays_on_retry(aws: AwsEnv) -> None:
    cand = capture()["candidate_id"]
    _inject("after-call.dynamodb.TransactWriteItems",
            ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"))
    assert code(admit(cand)) == "MUTATION_OUTCOME_UNKNOWN"
    retry = value(admit(cand))
    assert retry["replayed"] is True
    assert retry["outcome"]["status"] == "accepted"


def test_throttling_is_rate_limited_and_nothing_is_written(aws: AwsEnv) -> None:
    throttled = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                       "Message": "slow down"}}, "TransactWriteItems")
    _inject("before-call.dynamodb.TransactWriteItems", throttled)
    envelope = call(Tool.CAPTURE, valid_capture_args())
    assert code(envelope) == "RATE_LIMITED"
    assert envelope["error"]["retriable"] is True
    assert aws.scan(aws.settings.table_name) == []


def test_the_recorded_internal_events_run_through_the_handlers(aws: AwsEnv) -> None:
    event = json.loads((EVENTS / "tool_capture.json").read_text())
    envelope = capture_handler(event, lambda_context(Tool.CAPTURE))
    assert value(envelope)["status"] == "committed_pending"
    assert envelope["auditId"] == "audit-capture-0001"


def test_a_malformed_internal_event_is_invalid_schema(aws: AwsEnv) -> None:
    envelope = capture_handler({"tool": "capture", "context": {}},
                               lambda_context(Tool.CAPTURE))
    assert code(envelope) == "INVALID_SCHEMA"
    assert envelope["auditId"] == "unavailable"


def test_an_event_for_another_tool_or_an_ungranted_tool_is_unauthorized(aws: AwsEnv) -> None:
    event = json.loads((EVENTS / "tool_request_admission.json").read_text())
    assert code(capture_handler(event, lambda_context(Tool.CAPTURE))) == "UNAUTHORIZED"
    ungranted = call(Tool.CAPTURE, valid_capture_args(), capabilities=["search", "get"])
    assert code(ungranted) == "UNAUTHORIZED"


def test_a_passed_deadline_is_deadline_exceeded(aws: AwsEnv) -> None:
    envelope = call(Tool.CAPTURE, valid_capture_args(), deadline_ms=1_000)
    assert code(envelope) == "DEADLINE_EXCEEDED"
    assert aws.scan(aws.settings.table_name) == []


class _ExplodingPolicy:
    def descriptor(self) -> Any:
        raise RuntimeError(MARKER)

    def decide(self, request: Any) -> Any:
        raise RuntimeError(MARKER)


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """Every line the Powertools logger emits, formatted exactly as in Lambda."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(runtime.logger.registered_formatter)
    target = logging.getLogger(runtime.SERVICE_NAME)
    target.addHandler(handler)
    try:
        yield stream
    finally:
        target.removeHandler(handler)


def test_an_unexpected_failure_is_a_generic_error_without_its_text(
        aws: AwsEnv, log_lines: io.StringIO, capfd: pytest.CaptureFixture[str]) -> None:
    bootstrap.override(policy=_ExplodingPolicy())
    envelope = call(Tool.CAPTURE, valid_capture_args())
    # A mutation cannot tell where an unexpected exception struck (issue 15 item 7).
    assert code(envelope) == "MUTATION_OUTCOME_UNKNOWN"
    assert envelope["error"]["retriable"] is True
    assert MARKER not in json.dumps(envelope)
    logged = log_lines.getvalue() + "".join(capfd.readouterr())
    assert '"error_class":"RuntimeError"' in logged
    assert MARKER not in logged


def test_no_log_line_contains_captured_text(
        aws: AwsEnv, log_lines: io.StringIO, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    gate = install_approval_gate(aws.settings.table_name)
    cand = capture(text=MARKER)["candidate_id"]
    capture(text=MARKER)
    code(call(Tool.CAPTURE, valid_capture_args(text=MARKER + " changed")))
    code(call(Tool.CAPTURE, valid_capture_args(text=MARKER + " AKIAIOSFODNN7EXAMPLE")))
    record_id = value(admit(cand))["outcome"]["record_id"]
    args = forget_args(record_id)
    gate.approve(aws.dynamodb, "ref-f", Tool.FORGET, record_id, op_digest(Tool.FORGET, args))
    value(call(Tool.FORGET, args, confirmation_ref="ref-f"))
    out, err = capfd.readouterr()
    logged = log_lines.getvalue() + out + err + caplog.text
    assert '"message":"tool refused"' in logged  # the refusals above were logged...
    assert MARKER not in logged  # ...without the content
    assert "Quokka" not in logged
