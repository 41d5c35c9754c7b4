"""Hostile input through the MCP endpoint: a contract error or a JSON-RPC error, nothing else.

Hypothesis mutates valid arguments of every tool (wrong types, nulls, unsafe integers,
extra fields, missing fields, huge strings, non-NFC text, lone surrogates, deep nesting,
or a non-object in place of the arguments) and sends them through the real endpoint app in
both protocol eras; fixed cases add malformed JSON-RPC, a 1 MiB + 1 argument object and
pathological bodies. Every answer is below HTTP 500, carries no stack trace, and is
either a JSON-RPC error in the allowed ranges or a tool result whose envelope is a
contract error; whenever the answer is not a success, the store is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from engram_memory.contract.validation import MAX_ARGUMENT_BYTES, serialized_size
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import CATALOG
from engram_memory.domain.principals import INTERNAL_PRINCIPALS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.contract_fixtures import (
    PURPOSE_REF,
    valid_forget_args,
    valid_get_args,
    valid_request_admission_args,
    valid_search_args,
    valid_withdraw_args,
)
from tests.integration.conftest import AwsEnv
from tests.reliability.mcp_harness import McpHarness, Reply
from tests.reliability.support import World, capture_args

# JSON-RPC's own errors, plus the MCP SDK's transport rejections (-32000..-32099: e.g. a
# routing header that disagrees with the body) for requests malformed at that level.
JSONRPC_CODES = {-32700, -32600, -32601, -32602, -32603}
TRANSPORT_CODES = range(-32099, -32000 + 1)
TRACE_MARKERS = ("Traceback", 'File "', "site-packages", "Error(", "Exception(")
READ_ONLY = {Tool.SEARCH.mcp_name, Tool.GET.mcp_name}


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": [value]}
    return value


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([2**53 + 1, -(2**63), 10**30, 1.5, -0.0, 1e308]),
    st.sampled_from(["", "e\u0301", "\ud800", "a\udfffb", "x" * 70_000, "\u212b" * 3,
                     "sha256:" + "G" * 64, "mem_UPPER", "#scope#injection"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["a", "tenant", "confirmed"]), st.integers(), max_size=2),
    st.just(_deep(40)),
)


def valid_arguments() -> dict[str, dict[str, Any]]:
    """Valid argument objects per MCP tool name (targets unknown: nothing to change)."""
    return {
        Tool.SEARCH.mcp_name: valid_search_args(),
        Tool.GET.mcp_name: valid_get_args(),
        Tool.CAPTURE.mcp_name: capture_args("hostile base"),
        Tool.REQUEST_ADMISSION.mcp_name: valid_request_admission_args(),
        Tool.WITHDRAW.mcp_name: valid_withdraw_args(),
        Tool.FORGET.mcp_name: valid_forget_args(),
    }


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from paths(item, (*prefix, index))


@st.composite
def hostile_call(draw: st.DrawFn) -> tuple[str, Any]:
    """(tool name, arguments) with one hostile mutation of a valid argument object."""
    name = draw(st.sampled_from(sorted(valid_arguments())))
    args: Any = json.loads(json.dumps(valid_arguments()[name]))
    mutation = draw(st.sampled_from(["replace", "delete", "extra", "whole"]))
    if mutation == "whole":
        return name, draw(HOSTILE)
    path = draw(st.sampled_from(list(paths(args))))
    parent = args
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if mutation == "replace":
        parent[last] = draw(HOSTILE)
    elif mutation == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[draw(st.sampled_from(["extra", "tenant", "workspace", "confirmed"]))] = draw(
            HOSTILE)
    else:
        parent.append(draw(HOSTILE))
    return name, args


def snapshot(aws: AwsEnv) -> dict[str, list[str]]:
    """Every item of the three tables, comparable."""
    return {table: sorted(json.dumps(i, sort_keys=True, default=str) for i in items)
            for table, items in aws.scan_all().items()}


def assert_contained(reply: Reply, tool_name: str | None = None) -> bool:
    """The answer is a JSON-RPC error or a contract envelope; True when a tool succeeded."""
    assert reply.status < 500, reply.text[:300]
    assert not any(marker in reply.text for marker in TRACE_MARKERS), reply.text[:300]
    if reply.status == 202 and not reply.text:
        # The SDK's initialize era takes a message it cannot answer (e.g. an object id) as
        # a notification: 202, no body, nothing dispatched (the caller checks the store).
        return False
    try:
        body = reply.json()
    except ValueError:
        pytest.fail(f"the answer is not JSON: {reply.status} {reply.text[:200]!r}")
    if "error" in body:
        code = body["error"]["code"]
        assert code in JSONRPC_CODES or code in TRANSPORT_CODES, body
        return False
    assert reply.status == 200, reply.text[:300]
    result = body["result"]
    envelope = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == envelope
    assert result["isError"] is (not envelope["ok"])
    if envelope["ok"]:
        assert tool_name in READ_ONLY or tool_name is None, envelope
        return True
    assert envelope["error"]["code"] in CATALOG, envelope
    assert envelope["error"]["message"] == CATALOG[envelope["error"]["code"]].message
    return False


@settings(max_examples=90, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(call=hostile_call(), modern=st.booleans())
def test_hostile_arguments_get_a_contract_error_and_change_nothing(
    harness: McpHarness, aws: AwsEnv, call: tuple[str, Any], modern: bool
) -> None:
    name, arguments = call
    before = snapshot(aws)
    # A confirmation reference nobody approved: gated tools reach their schema and gate
    # (without one they are refused before any tool runs, tested below).
    token = harness.token(confirmation_ref="ref-hostile-unapproved")
    reply = harness.call_tool(name, arguments, token, modern=modern)
    if not assert_contained(reply, name):
        assert snapshot(aws) == before


def _request(method: str, params: Any, request_id: Any = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params}).encode()


MALFORMED = {
    "truncated": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{',
    "not-utf8": b"\xff\xfe\xfd",
    "empty": b"",
    "null": b"null",
    "array": b"[]",
    "batch": b"[" + _request("tools/list", {}) + b"," + _request("tools/list", {}) + b"]",
    "no-version": b'{"id":1,"method":"tools/list"}',
    "old-version": b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
    "id-object": _request("tools/list", {}, {"nested": True}),
    "params-list": _request("tools/call", [1, 2]),
    "unknown-method": _request("memory/dump", {}),
    "unknown-tool": _request("tools/call", {"name": "engram_memory_admin", "arguments": {}}),
    "name-not-string": _request("tools/call", {"name": 7, "arguments": {}}),
    "args-not-object": _request("tools/call", {"name": "engram_memory_get", "arguments": [1]}),
    "deep-5000": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                  b'"engram_memory_search","arguments":{"query":' + b"[" * 5000
                  + b"]" * 5000 + b"}}}"),
    "lone-surrogate-escape": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                              b'{"name":"engram_memory_search","arguments":{"query":"\\ud800",'
                              b'"purpose_ref":"' + PURPOSE_REF.encode() + b'"}}}'),
    "nul-bytes": b'{"jsonrpc":"2.0","id":1,"method":"tools/list"\x00\x00}',
}


@pytest.mark.parametrize("modern", [True, False], ids=["stateless-era", "initialize-era"])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_json_rpc_is_a_json_rpc_error_never_a_crash(
    harness: McpHarness, aws: AwsEnv, name: str, modern: bool
) -> None:
    before = snapshot(aws)
    reply = harness.post(MALFORMED[name], harness.token(), modern=modern)
    assert assert_contained(reply) is False
    assert snapshot(aws) == before


def _sized_search(target_bytes: int) -> dict[str, Any]:
    args = {"query": "", "purpose_ref": PURPOSE_REF, "extra_padding": ""}
    args.pop("extra_padding")
    base = serialized_size(args)
    args["query"] = "q" * (target_bytes - base)
    assert serialized_size(args) == target_bytes
    return args


@pytest.mark.parametrize("modern", [True, False], ids=["stateless-era", "initialize-era"])
def test_an_argument_object_of_one_mebibyte_plus_one_byte_is_invalid_schema(
    harness: McpHarness, aws: AwsEnv, modern: bool
) -> None:
    before = snapshot(aws)
    big = capture_args("oversized")
    filler = big["payload"]["components"][0]
    filler["text"] = ""
    filler["text"] = "z" * (MAX_ARGUMENT_BYTES + 1 - serialized_size(big))
    assert serialized_size(big) == MAX_ARGUMENT_BYTES + 1
    reply = harness.call_tool(Tool.CAPTURE.mcp_name, big, harness.token(), modern=modern)
    assert assert_contained(reply, Tool.CAPTURE.mcp_name) is False
    assert reply.json()["result"]["structuredContent"]["error"]["code"] == "INVALID_SCHEMA"
    search = harness.call_tool(Tool.SEARCH.mcp_name, _sized_search(MAX_ARGUMENT_BYTES + 1),
                               harness.token(), modern=modern)
    assert search.json()["result"]["structuredContent"]["error"]["code"] == "INVALID_SCHEMA"
    assert snapshot(aws) == before


def test_a_token_for_another_tenant_is_refused_before_any_tool_runs(
    harness: McpHarness, aws: AwsEnv
) -> None:
    before = snapshot(aws)
    for claims in ({"tenant": "tenant-b"}, {"workspace": "ws-unregistered"}, {}):
        token = harness.token(**claims) if claims else "not-a-jwt"
        reply = harness.call_tool(Tool.GET.mcp_name, valid_get_args(), token)
        assert assert_contained(reply) is False
        assert reply.json()["error"]["code"] == -32603
    assert snapshot(aws) == before


@pytest.mark.parametrize("principal", sorted(INTERNAL_PRINCIPALS))
def test_an_agent_token_naming_a_principal_of_the_service_is_refused_before_any_tool_runs(
    harness: McpHarness, aws: AwsEnv, principal: str
) -> None:
    # Under these principals the host adjudication and the expiry sweeper reserve their
    # deterministic idempotency keys; an agent taking one first would block them for good.
    before = snapshot(aws)
    token = harness.token(principal=principal)
    admission = {**valid_request_admission_args(),
                 "idempotency_key": f"adjudicate:cand_{'a' * 52}"}
    capture = capture_args("squatter", key=f"expiry:mem_{'b' * 52}")
    for name, arguments in ((Tool.REQUEST_ADMISSION.mcp_name, admission),
                            (Tool.CAPTURE.mcp_name, capture)):
        reply = harness.call_tool(name, arguments, token)
        assert assert_contained(reply) is False
        assert reply.json()["error"]["code"] == -32603
    assert snapshot(aws) == before


WRONG_TYPED_PURPOSES = [7, ["purpose:engineering-notes"], {"ref": "purpose:engineering-notes"},
                        True, 1.5]


@pytest.mark.parametrize("modern", [True, False], ids=["stateless-era", "initialize-era"])
@pytest.mark.parametrize("purpose", WRONG_TYPED_PURPOSES, ids=lambda p: type(p).__name__)
def test_a_purpose_ref_of_the_wrong_type_is_invalid_schema_not_a_protocol_refusal(
    harness: McpHarness, aws: AwsEnv, purpose: Any, modern: bool
) -> None:
    # Issue 15 item 6: these were -32603, the answer for a purpose mismatch.
    before = snapshot(aws)
    capture = capture_args("wrong-typed purpose")
    capture["payload"]["purpose_ref"] = purpose
    calls = {Tool.SEARCH.mcp_name: {**valid_search_args(), "purpose_ref": purpose},
             Tool.GET.mcp_name: {**valid_get_args(), "purpose_ref": purpose},
             Tool.CAPTURE.mcp_name: capture}
    for name, arguments in calls.items():
        reply = harness.call_tool(name, arguments, harness.token(), modern=modern)
        assert assert_contained(reply, name) is False
        envelope = reply.json()["result"]["structuredContent"]
        assert envelope["error"]["code"] == "INVALID_SCHEMA", name
    assert snapshot(aws) == before


@pytest.mark.parametrize("modern", [True, False], ids=["stateless-era", "initialize-era"])
def test_a_gated_call_without_a_confirmation_reference_is_refused_before_any_tool_runs(
    harness: McpHarness, aws: AwsEnv, world: World, modern: bool
) -> None:
    # Issue 15 items 1 and 2: no reference is -32603; an unapproved reference is
    # gate_failed for a real target exactly as for an unknown one.
    pending = world.capture("gated pending")
    record = world.record("gated record")
    before = snapshot(aws)
    targets = {
        Tool.WITHDRAW.mcp_name: [valid_withdraw_args(candidate_id=pending),
                                 valid_withdraw_args()],
        Tool.FORGET.mcp_name: [valid_forget_args(record_id=record), valid_forget_args()],
    }
    unapproved = harness.token(confirmation_ref="ref-hostile-unapproved")
    for name, (real, unknown) in targets.items():
        refused = harness.call_tool(name, real, harness.token(), modern=modern)
        assert assert_contained(refused) is False
        assert refused.json()["error"]["code"] == -32603
        answers = [harness.call_tool(name, args, unapproved, modern=modern).json()
                   for args in (real, unknown)]
        envelopes = [a["result"]["structuredContent"] for a in answers]
        assert [e["error"]["code"] for e in envelopes] == ["gate_failed"] * 2
        assert envelopes[0] == envelopes[1]  # the same token: even the auditId matches
    assert snapshot(aws) == before
