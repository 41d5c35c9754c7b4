"""Hostile input at the HTTP layer of the endpoint app: methods, headers, bodies, Host/Origin.

The app under test is the one the local service and the endpoint Lambda serve (``/mcp``,
the RFC 9728 metadata, ``/host/*`` through the real host_api handler), driven over ASGI or
through the Lambda's API Gateway bridge. Every answer comes promptly, is below 500 and
carries a constant body; nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from engram_memory.gate.host_api import MAX_BODY_BYTES
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from tests.integration.conftest import AwsEnv
from tests.reliability.mcp_harness import ALT_HOST, HOST, MODERN, RESOURCE, McpHarness
from tests.reliability.test_hostile_input import TRACE_MARKERS, snapshot

EVENTS = Path(__file__).resolve().parents[1] / "events"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
SSE_ACCEPT = {"Accept": "text/event-stream", "Host": HOST}
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})


@pytest.mark.parametrize("extra", [{}, {"Last-Event-ID": "0"}, {"Last-Event-ID": "\u2603"}],
                         ids=["plain", "last-event-id", "last-event-id-odd"])
@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH"])
@pytest.mark.parametrize("with_token", [False, True], ids=["no-token", "token"])
def test_mcp_answers_405_at_once_to_every_method_but_post(
    harness: McpHarness, method: str, extra: dict[str, str], with_token: bool
) -> None:
    # Before: GET held an SSE stream open forever (token or not); Last-Event-ID gave a 500.
    headers: dict[str, str | bytes] = {**SSE_ACCEPT, "MCP-Protocol-Version": MODERN,
                                       **{k: v.encode() for k, v in extra.items()}}
    if with_token:
        headers["Authorization"] = f"Bearer {harness.token()}"
    reply = harness.request(method, "/mcp", headers, timeout=5)
    assert reply.status == 405
    assert reply.headers["allow"] == "POST"
    assert reply.json()["error"]["code"] == -32600


def test_a_post_carrying_last_event_id_is_answered_normally(harness: McpHarness) -> None:
    headers: dict[str, str | bytes] = {
        "Host": HOST, "Content-Type": "application/json", "Last-Event-ID": "7",
               "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {harness.token()}"}
    reply = harness.request("POST", "/mcp", headers, LIST.encode(), timeout=10)
    assert reply.status == 200, reply.text
    assert reply.json()["result"]["tools"]


def _event(headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "apigw_mcp_legacy_tools_list.json").read_text())
    event["headers"] = {"host": HOST, "content-type": "application/json",
                        "accept": "application/json, text/event-stream", **headers}
    event["requestContext"]["domainName"] = HOST
    event["body"] = LIST
    event.update(extra)
    return event


@pytest.mark.parametrize("hostile", [
    {"headers": {"user-agent": "agent/1.0 \u2603"}},
    {"headers": {"x-note": "\ud800 lone surrogate", "user-agent": "\U0001f916"}},
    {"headers": {}, "cookies": ["session=\u2603"]},
    {"headers": {}, "rawQueryString": "q=\u2603&r=\u00e9"},
], ids=["snowman-user-agent", "surrogate-and-emoji", "cookie", "query"])
def test_headers_that_are_not_latin_1_do_not_break_the_lambda_bridge(
    harness: McpHarness, hostile: dict[str, Any]
) -> None:
    # Before: asgi_scope encoded every header as Latin-1 and raised: a 500 in AWS.
    headers = {**hostile.pop("headers"), "authorization": f"Bearer {harness.token()}"}
    reply = harness.apigw(_event(headers, **hostile))
    assert reply.status == 200, reply.text
    assert reply.json()["result"]["tools"]


@pytest.mark.parametrize("path", [WELL_KNOWN, WELL_KNOWN + "/mcp", "/host/confirmations",
                                  "/mcp"])
@pytest.mark.parametrize(("headers", "status"), [
    ({"Host": "attacker.example"}, 421),
    ({"Host": "127.0.0.1.attacker.example:8787"}, 421),
    ({"Host": HOST, "Origin": "https://attacker.example"}, 403),
], ids=["foreign-host", "suffixed-host", "foreign-origin"])
def test_every_route_checks_host_and_origin(
    harness: McpHarness, aws: AwsEnv, path: str, headers: dict[str, str], status: int
) -> None:
    before = snapshot(aws)
    method = "GET" if path.startswith(WELL_KNOWN) else "POST"
    sent: dict[str, str | bytes] = {**headers, "Content-Type": "application/json",
                                    "Authorization": f"Bearer {harness.maintainer()}"}
    reply = harness.request(method, path, sent, b"{}", timeout=5)
    assert reply.status == status, (reply.status, reply.text)
    assert snapshot(aws) == before


@pytest.mark.parametrize("host", [HOST, ALT_HOST])
def test_the_metadata_names_the_configured_resource_whatever_the_host_header(
    harness: McpHarness, host: str
) -> None:
    for path in (WELL_KNOWN, WELL_KNOWN + "/mcp"):
        reply = harness.request("GET", path, {"Host": host}, timeout=5)
        assert reply.status == 200
        assert reply.json()["resource"] == RESOURCE


class Body:
    """A streamed request body that counts how much of it the server pulled."""

    def __init__(self, total: int, chunk: int = 64 * 1024) -> None:
        self.total, self.chunk, self.pulled = total, chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.total:
            self.pulled += self.chunk
            yield b" " * self.chunk


def _host_post(harness: McpHarness, token: str | None, body: Body,
               **headers: str) -> tuple[int, dict[str, Any]]:
    sent: dict[str, str | bytes] = {"Host": HOST, "Content-Type": "application/json",
                                    **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    reply = harness.request("POST", "/host/confirmations", sent, body.__aiter__(), timeout=10)
    assert not any(marker in reply.text for marker in TRACE_MARKERS)
    return reply.status, reply.json()


@pytest.mark.parametrize("who", ["none", "garbage", "agent"])
def test_host_routes_refuse_an_unauthenticated_body_without_reading_it(
    harness: McpHarness, aws: AwsEnv, who: str
) -> None:
    # Before: the bridge read the whole body first (4 x 256 MiB took 768 MiB to 2.4 GiB).
    before = snapshot(aws)
    token = {"none": None, "garbage": "not-a-jwt", "agent": harness.token()}[who]
    body = Body(256 * 1024 * 1024)
    status, answer = _host_post(harness, token, body)
    assert status == (403 if who == "agent" else 401)
    assert answer["error"]["code"] in ("UNAUTHENTICATED", "FORBIDDEN")
    assert body.pulled <= body.chunk
    assert snapshot(aws) == before


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_host_body_over_the_cap_is_413_after_reading_at_most_the_cap(
    harness: McpHarness, aws: AwsEnv, declared: bool
) -> None:
    before = snapshot(aws)
    body = Body(256 * 1024 * 1024)
    length = {"Content-Length": str(body.total)} if declared else {}
    status, answer = _host_post(harness, harness.maintainer(), body, **length)
    assert status == 413
    assert answer == {"error": {"code": "PAYLOAD_TOO_LARGE",
                                "message": "The request body is too large."}}
    assert body.pulled <= (body.chunk if declared else MAX_BODY_BYTES + body.chunk)
    assert snapshot(aws) == before


def test_the_host_body_cap_is_the_mcp_body_cap() -> None:
    # One cap on every route of the app: the MCP SDK's own limit on /mcp.
    assert MAX_BODY_BYTES == DEFAULT_MAX_REQUEST_BODY_SIZE


PARSE_ERROR = ('{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},'
               '"id":null}')
INVALID_BODY = ('{"jsonrpc":"2.0","error":{"code":-32600,"message":"Body must be a single '
                'JSON-RPC request or notification object"},"id":null}')
UNREADABLE_BODIES = [
    (b"{", PARSE_ERROR), (b"", PARSE_ERROR), (b'{"jsonrpc": "2.0", "id": 1,', PARSE_ERROR),
    (b"\xff\xfe", PARSE_ERROR),
    (b"null", INVALID_BODY), (b"[]", INVALID_BODY), (b"[1, 2]", INVALID_BODY),
    (b'"x"', INVALID_BODY), (b"5", INVALID_BODY),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', INVALID_BODY),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": "x"}', INVALID_BODY),
    (b'{"jsonrpc": "1.0", "id": 1, "method": "initialize"}', INVALID_BODY),
    (b'{"jsonrpc": "2.0", "method": "notifications/initialized", "params": 5}', INVALID_BODY),
]
LIBRARY_TEXT = ("pydantic", "validation error", "EOF", "line 1", "input_value", "Traceback")


@pytest.mark.parametrize("modern", [False, True], ids=["initialize-era", "2026-era"])
@pytest.mark.parametrize(("body", "expected"), UNREADABLE_BODIES)
def test_an_unreadable_body_gets_a_constant_json_rpc_error_on_both_eras(
    harness: McpHarness, modern: bool, body: bytes, expected: str
) -> None:
    # Before: the initialize era answered "Parse error: EOF while parsing…" and
    # "Validation error: 4 validation errors for union[…] … errors.pydantic.dev…".
    reply = harness.post(body, None, modern)
    assert (reply.status, reply.text) == (400, expected)
    assert int(reply.headers["content-length"]) == len(expected.encode())
    assert not any(text.lower() in reply.text.lower() for text in LIBRARY_TEXT)


@pytest.mark.parametrize("modern", [False, True], ids=["initialize-era", "2026-era"])
@pytest.mark.parametrize(("body", "expected"), UNREADABLE_BODIES[:1] + UNREADABLE_BODIES[4:])
def test_an_unreadable_body_through_the_lambda_bridge_is_the_same_constant(
    harness: McpHarness, modern: bool, body: bytes, expected: str
) -> None:
    headers = {"mcp-protocol-version": MODERN} if modern else {}
    reply = harness.apigw(_event(headers, body=body.decode()))
    assert (reply.status, reply.text) == (400, expected)
