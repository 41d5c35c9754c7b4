"""Dispatch through the invoker port, and the lambda:Invoke adapter's error mapping."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError, ResponseStreamingError
from botocore.stub import Stubber
from engram_memory.adapters.lambda_invoker import LambdaInvoker
from engram_memory.contract.envelope import failure, success
from engram_memory.domain.context import MUTATING_TOOLS, InvocationContext, Scope, Tool
from engram_memory.domain.errors import (
    MutationOutcomeUnknown,
    NotFound,
    RateLimited,
    StoreUnavailable,
)
from engram_memory.local.inprocess_invoker import InProcessInvoker
from engram_memory.mcp.dispatch import (
    dispatch,
    missing_confirmation,
    protocol_refusal,
    purpose_mismatch,
)

CTX = InvocationContext(
    scope=Scope("t1", "ws1"), principal="alice", agent_id="a1", session_id="s1",
    purpose_ref="purpose:x", audit_id="audit-host", deadline_ms=2_000,
    capabilities=frozenset({Tool.SEARCH, Tool.CAPTURE}), token_id="jti-1",
)


class RecordingInvoker:
    def __init__(self, result: Any = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[Tool, dict[str, Any]]] = []
        self.result = result
        self.error = error

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((tool, invocation))
        if self.error is not None:
            raise self.error
        return dict(self.result)


def test_the_tool_receives_the_verified_context_and_the_raw_arguments() -> None:
    invoker = RecordingInvoker(success({"records": []}, "audit-host"))
    dispatch(Tool.SEARCH, CTX, {"query": "q", "purpose_ref": "purpose:x", "extra": 1},
             invoker, lambda: 1_000)
    tool, event = invoker.calls[0]
    assert tool is Tool.SEARCH
    assert event["tool"] == "search"
    assert event["arguments"] == {"query": "q", "purpose_ref": "purpose:x", "extra": 1}
    assert event["context"]["tenant_id"] == "t1"
    assert event["context"]["token_id"] == "jti-1"


def test_a_passed_deadline_is_refused_before_any_invocation() -> None:
    invoker = RecordingInvoker(success({}, "x"))
    envelope = dispatch(Tool.SEARCH, CTX, {}, invoker, lambda: 2_000)
    assert envelope["error"]["code"] == "DEADLINE_EXCEEDED"
    assert invoker.calls == []


def test_the_host_audit_id_replaces_whatever_the_tool_echoed() -> None:
    envelope = dispatch(Tool.SEARCH, CTX, {}, RecordingInvoker(failure(NotFound, "other")),
                        lambda: 1_000)
    assert envelope["auditId"] == "audit-host"
    assert envelope["error"]["code"] == "NOT_FOUND"


def test_an_invoker_failure_becomes_its_contract_error() -> None:
    envelope = dispatch(Tool.CAPTURE, CTX, {}, RecordingInvoker(error=MutationOutcomeUnknown()),
                        lambda: 1_000)
    assert envelope["error"]["code"] == "MUTATION_OUTCOME_UNKNOWN"


def test_an_unexpected_failure_never_leaks_its_text() -> None:
    envelope = dispatch(Tool.SEARCH, CTX, {},
                        RecordingInvoker(error=RuntimeError("secret content here")),
                        lambda: 1_000)
    assert envelope["error"]["code"] == "STORE_UNAVAILABLE"
    assert "secret" not in json.dumps(envelope)


def test_a_malformed_tool_answer_is_a_store_unavailable_envelope() -> None:
    envelope = dispatch(Tool.SEARCH, CTX, {}, RecordingInvoker({"ok": "yes"}), lambda: 1_000)
    assert envelope["error"]["code"] == "STORE_UNAVAILABLE"


@pytest.mark.parametrize("tool", sorted(MUTATING_TOOLS, key=str))
def test_an_unexpected_failure_of_a_mutation_leaves_its_outcome_unknown(tool: Tool) -> None:
    envelope = dispatch(tool, CTX, {}, RecordingInvoker(error=RuntimeError("secret content")),
                        lambda: 1_000)
    assert envelope["error"]["code"] == "MUTATION_OUTCOME_UNKNOWN"
    assert envelope["auditId"] == "audit-host"
    assert "secret" not in json.dumps(envelope)


def test_a_malformed_answer_from_a_mutation_leaves_its_outcome_unknown() -> None:
    envelope = dispatch(Tool.CAPTURE, CTX, {}, RecordingInvoker({"ok": "yes"}), lambda: 1_000)
    assert envelope["error"]["code"] == "MUTATION_OUTCOME_UNKNOWN"


@pytest.mark.parametrize(
    ("tool", "arguments", "mismatch"),
    [
        (Tool.SEARCH, {"purpose_ref": "purpose:x"}, False),
        (Tool.SEARCH, {"purpose_ref": "purpose:y"}, True),
        # Issue 15 item 6: a purpose of the wrong JSON type was -32603; it is malformed
        # arguments (INVALID_SCHEMA from the tool), not a purpose mismatch.
        (Tool.GET, {"purpose_ref": 3}, False),
        (Tool.SEARCH, {"purpose_ref": ["purpose:y"]}, False),
        (Tool.CAPTURE, {"payload": {"purpose_ref": {"ref": "purpose:y"}}}, False),
        (Tool.SEARCH, {}, False),
        (Tool.CAPTURE, {"payload": {"purpose_ref": "purpose:y"}}, True),
        (Tool.CAPTURE, {"payload": {"purpose_ref": "purpose:x"}}, False),
        (Tool.CAPTURE, {"payload": "nope"}, False),
        (Tool.WITHDRAW, {"purpose_ref": "purpose:y"}, False),
    ],
)
def test_purpose_mismatch_compares_the_claimed_purpose_with_the_host_one(
    tool: Tool, arguments: dict[str, Any], mismatch: bool
) -> None:
    assert purpose_mismatch(tool, arguments, CTX) is mismatch


def lambda_client() -> Any:
    return boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x",
                        aws_secret_access_key="x")


def test_lambda_invoke_sends_the_event_and_returns_the_envelope() -> None:
    client = lambda_client()
    envelope = success({"records": []}, "audit-host")
    event = {"tool": "search", "context": {}, "arguments": {"query": "q"}}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(envelope).encode())},
            {"FunctionName": "fn-search", "InvocationType": "RequestResponse",
             "Payload": json.dumps(event).encode()},
        )
        invoker = LambdaInvoker(lambda _timeout: client, {Tool.SEARCH: "fn-search"})
        assert invoker.invoke(Tool.SEARCH, event) == envelope


def test_a_refused_invoke_is_store_unavailable() -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        stub.add_client_error("invoke", "ResourceNotFoundException")
        with pytest.raises(StoreUnavailable):
            LambdaInvoker(lambda _timeout: client, {Tool.CAPTURE: "fn"}).invoke(Tool.CAPTURE, {})


def test_a_throttled_invoke_is_rate_limited_as_on_every_aws_path() -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        stub.add_client_error("invoke", "TooManyRequestsException")
        with pytest.raises(RateLimited):
            LambdaInvoker(lambda _timeout: client, {Tool.CAPTURE: "fn"}).invoke(Tool.CAPTURE, {})


def test_a_crashed_mutating_function_is_mutation_outcome_unknown() -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        stub.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled",
                                     "Payload": io.BytesIO(b'{"errorMessage":"x"}')})
        with pytest.raises(MutationOutcomeUnknown):
            LambdaInvoker(lambda _timeout: client, {Tool.CAPTURE: "fn"}).invoke(Tool.CAPTURE, {})


class BrokenStream:
    """A payload whose stream breaks after invoke returned (the function already ran)."""

    def read(self, *_: Any) -> bytes:
        raise ResponseStreamingError(error=ConnectionError("reset"))


def invoke_with_broken_payload(tool: Tool) -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        stub.add_response("invoke", {"StatusCode": 200, "Payload": BrokenStream()})
        LambdaInvoker(lambda _timeout: client, {tool: "fn"}).invoke(tool, {})


def test_a_mutations_answer_lost_in_transit_is_mutation_outcome_unknown() -> None:
    with pytest.raises(MutationOutcomeUnknown):
        invoke_with_broken_payload(Tool.WITHDRAW)


def test_a_reads_answer_lost_in_transit_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        invoke_with_broken_payload(Tool.GET)


def test_a_timed_out_read_is_store_unavailable_not_unknown() -> None:
    class TimingOut:
        def invoke(self, **_: Any) -> Any:
            raise ReadTimeoutError(endpoint_url="https://lambda")

    with pytest.raises(StoreUnavailable):
        LambdaInvoker(lambda _timeout: TimingOut(), {Tool.SEARCH: "fn"}).invoke(Tool.SEARCH, {})  # type: ignore[arg-type]


def test_an_unconfigured_function_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        LambdaInvoker(lambda _timeout: lambda_client(), {}).invoke(Tool.SEARCH, {})


def test_the_in_process_invoker_calls_the_handler_file_with_a_json_copy(tmp_path: Path) -> None:
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "handler.py").write_text(
        "def lambda_handler(event, context):\n"
        "    return {'ok': False, 'auditId': event['context']['audit_id'],\n"
        "            'seen': type(event).__name__, 'fn': context.function_name}\n"
    )
    invoker = InProcessInvoker(tmp_path)
    result = invoker.invoke(Tool.SEARCH, {"context": {"audit_id": "a"}})
    assert result == {"ok": False, "auditId": "a", "seen": "dict", "fn": "engram-search"}
    assert invoker.available() == frozenset({Tool.SEARCH})


def test_a_missing_handler_file_is_store_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        InProcessInvoker(tmp_path).invoke(Tool.GET, {})


@pytest.mark.parametrize(
    ("tool", "confirm_required", "ref", "refused"),
    [
        # Issue 15 item 1: a gated call with no confirmation reference reached the tool
        # (gate_failed); CONTRACT §0 makes it a protocol refusal.
        (Tool.WITHDRAW, frozenset(), None, True),
        (Tool.FORGET, frozenset(), None, True),
        (Tool.CAPTURE, frozenset({Tool.CAPTURE}), None, True),
        (Tool.WITHDRAW, frozenset(), "ref-present", False),
        (Tool.CAPTURE, frozenset(), None, False),
        (Tool.SEARCH, frozenset(), None, False),
    ],
)
def test_a_gated_call_without_a_confirmation_reference_is_a_protocol_refusal(
    tool: Tool, confirm_required: frozenset[Tool], ref: str | None, refused: bool
) -> None:
    ctx = replace(CTX, confirmation_required=confirm_required, confirmation_ref=ref)
    assert missing_confirmation(tool, ctx) is refused
    assert protocol_refusal(tool, {}, ctx) is refused
