"""Nothing a client sends before authentication reaches a log line (issue 26 item 4).

Refusals of a bad ``Host`` or ``Origin`` are logged as constant lines, on every path that
checks them: the endpoint app over ASGI (the local service), the same app through the
API Gateway bridge (the MCP endpoint Lambda) and the host_api Lambda's own event check. A
client that leaves mid-body leaves no traceback at the local service's default level. The
values sent are registered with the leak watch, so ``test_zz_leak_check`` also fails if
one ever reaches a log, metric or trace.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from engram_memory.composition.endpoint import build_endpoint
from engram_memory.local.inprocess_invoker import (
    InProcessInvoker,
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.listener import listener_config
from engram_memory.local.service import bind_listener
from engram_memory.mcp.server import build_app, build_server, session_manager, transport_security

from tests.integration.conftest import AwsEnv
from tests.reliability import leakwatch
from tests.reliability.conftest import attach_everywhere
from tests.reliability.mcp_harness import (
    HOST,
    ISSUER,
    MODERN,
    RESOURCE,
    McpHarness,
    host_environment,
    new_host_key,
)
from tests.reliability.support import World

EVENTS = Path(__file__).resolve().parents[1] / "events"
CONSTANT_LINES = ("Refused a request: Host header not allowed",
                  "Refused a request: Origin header not allowed")
TRACE_TEXT = ("Traceback", "ClientDisconnect", ".py\"", "site-packages")


def _canary(kind: str) -> str:
    value = f"canary-{kind}-{secrets.token_hex(8)}" + "x" * 64
    leakwatch.register(value)
    return value


def _new_lines(before: int) -> list[str]:
    return leakwatch.lines()[before:]


def _assert_quiet(before: int, canaries: list[str]) -> None:
    lines = _new_lines(before)
    assert not [line[:120] for line in lines if any(c in line for c in canaries)]
    for constant in CONSTANT_LINES:  # the refusals were logged, and watched
        assert any(constant in line for line in lines), constant


def _bad_headers() -> tuple[list[str], list[dict[str, str]]]:
    host, origin = _canary("host") + ".example", "https://" + _canary("origin") + ".example"
    return [host, origin], [{"Host": host}, {"Host": HOST, "Origin": origin}]


@pytest.mark.parametrize("path", ["/mcp", "/.well-known/oauth-protected-resource",
                                  "/host/confirmations"])
def test_host_and_origin_refusals_are_constant_log_lines_over_asgi(
    harness: McpHarness, path: str
) -> None:
    # Before: "Invalid Host header: <value>" at WARNING, any length, no token needed.
    canaries, cases = _bad_headers()
    before = len(leakwatch.lines())
    for headers in cases:
        sent: dict[str, str | bytes] = {**headers, "Content-Type": "application/json"}
        reply = harness.request("POST" if path != "/.well-known/oauth-protected-resource"
                                else "GET", path, sent, b"{}", timeout=5)
        assert reply.status in (421, 403)
    _assert_quiet(before, canaries)


def test_host_and_origin_refusals_are_constant_log_lines_in_the_endpoint_lambda_bridge(
    harness: McpHarness,
) -> None:
    canaries, cases = _bad_headers()
    before = len(leakwatch.lines())
    for headers in cases:
        event: dict[str, Any] = json.loads(
            (EVENTS / "apigw_mcp_legacy_tools_list.json").read_text())
        event["headers"] = {"content-type": "application/json",
                            **{name.lower(): value for name, value in headers.items()}}
        event["requestContext"]["domainName"] = HOST
        assert harness.apigw(event).status in (421, 403)
    _assert_quiet(before, canaries)


def test_host_and_origin_refusals_are_constant_log_lines_in_the_host_api_lambda(
    world: World,
) -> None:
    handler = load_handler(default_functions_dir(), "host_api")
    assert handler is not None
    canaries, cases = _bad_headers()
    before = len(leakwatch.lines())
    for headers in cases:
        event: dict[str, Any] = json.loads(
            (EVENTS / "apigw_host_confirmation_request.json").read_text())
        domain = event["requestContext"]["domainName"]
        event["headers"] = {"content-type": "application/json", "host": domain,
                            **{name.lower(): value for name, value in headers.items()}}
        if event["headers"]["host"] == HOST:
            event["headers"]["host"] = domain
        answer = handler(event, LocalLambdaContext(function_name="host_api"))
        assert answer["statusCode"] in (421, 403)
    _assert_quiet(before, canaries)


@pytest.fixture
def local_listener(aws: AwsEnv) -> Iterator[int]:
    """The endpoint app behind the local listener, at the local service's default level."""
    key = new_host_key()
    settings = aws.configure(**host_environment(key))
    World(aws)
    endpoint = build_endpoint(settings, InProcessInvoker(default_functions_dir()))
    manager = session_manager(build_server(endpoint), transport_security([HOST]))
    app = build_app(manager, issuer=ISSUER, resource_url=RESOURCE)
    sock = bind_listener("127.0.0.1", 0)
    server = uvicorn.Server(listener_config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    attach_everywhere()  # uvicorn's own loggers, which its logging config just replaced
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.mark.parametrize("era", ["", f"MCP-Protocol-Version: {MODERN}\r\n"],
                         ids=["initialize-era", "2026-era"])
def test_a_client_leaving_mid_body_leaves_no_traceback(local_listener: int, era: str) -> None:
    # Before: the SDK logged "Error handling POST request" with a 10-line traceback at ERROR.
    before = len(leakwatch.lines())
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", local_listener), timeout=5) as sock:
            sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: {HOST}\r\n{era}"
                          "Content-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\n"
                          "Content-Length: 1000\r\n\r\n{\"jsonrpc\"").encode())
            time.sleep(0.1)
    time.sleep(0.5)  # bounded: the server has long seen every disconnect
    traced = [line[:200] for line in _new_lines(before) if any(t in line for t in TRACE_TEXT)]
    assert traced == []
