"""The real local service against hostile HTTP clients (raw sockets on 127.0.0.1 only)."""

from __future__ import annotations

import socket

import httpx2
import pytest
from engram_memory.local.service import RunningService

from .test_host_routes import maintainer

WAIT_S = 5.0


def exchange(service: RunningService, request: bytes) -> bytes:
    """Send ``request`` on a fresh connection; everything answered until the server closes."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=WAIT_S) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def huge_post(service: RunningService, path: str, authorization: str = "") -> bytes:
    """A POST declaring 256 MiB, of which only 64 KiB is ever sent."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {256 * 1024 * 1024}\r\n"
            f"{authorization}\r\n").encode() + b" " * 65536


@pytest.mark.parametrize("path", ["/host/confirmations", "/host/adjudications/cand_x"])
def test_an_unauthenticated_host_post_is_refused_without_waiting_for_its_body(
    service: RunningService, path: str
) -> None:
    answer = exchange(service, huge_post(service, path))
    assert answer.startswith(b"HTTP/1.1 401")
    assert b"connection: close" in answer.lower()


def test_an_operator_post_over_the_cap_is_413_without_waiting_for_its_body(
    service: RunningService,
) -> None:
    bearer = f"Authorization: Bearer {maintainer(service)}\r\n"
    answer = exchange(service, huge_post(service, "/host/confirmations", bearer))
    assert answer.startswith(b"HTTP/1.1 413")


def test_an_mcp_post_over_the_cap_is_413_without_waiting_for_its_body(
    service: RunningService,
) -> None:
    assert exchange(service, huge_post(service, "/mcp")).startswith(b"HTTP/1.1 413")


def test_get_on_mcp_is_405_at_once_rather_than_an_endless_stream(
    service: RunningService,
) -> None:
    answer = exchange(service, (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n"
                                "Accept: text/event-stream\r\nLast-Event-ID: 1\r\n"
                                "Connection: close\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 405")
    assert b"allow: POST" in answer


def test_content_length_with_transfer_encoding_is_refused(service: RunningService) -> None:
    answer = exchange(service, (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n"
                                "Content-Type: application/json\r\nContent-Length: 2\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 400")


def test_the_metadata_resource_is_the_configured_url_whatever_the_host_header(
    service: RunningService,
) -> None:
    for host in (f"localhost:{service.port}", f"127.0.0.1:{service.port}"):
        response = httpx2.get(service.base_url + "/.well-known/oauth-protected-resource",
                              headers={"Host": host})
        assert response.status_code == 200
        assert response.json()["resource"] == service.mcp_url


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource",
                                  "/host/confirmations/conf-x?workspace_id=ws1"])
def test_the_metadata_and_host_routes_check_host_and_origin(
    service: RunningService, path: str
) -> None:
    bearer = {"Authorization": f"Bearer {maintainer(service)}"}
    foreign_host = httpx2.get(service.base_url + path, headers={**bearer, "Host": "evil.example"})
    assert foreign_host.status_code == 421
    foreign_origin = httpx2.get(service.base_url + path,
                                headers={**bearer, "Origin": "https://evil.example"})
    assert foreign_origin.status_code == 403


@pytest.mark.parametrize("era", [{}, {"MCP-Protocol-Version": "2026-07-28"}],
                         ids=["initialize-era", "2026-era"])
@pytest.mark.parametrize(("body", "code", "message"), [
    (b"{", -32700, "Parse error"),
    (b"null", -32600, "Body must be a single JSON-RPC request or notification object"),
    (b"[]", -32600, "Body must be a single JSON-RPC request or notification object"),
    (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}', -32600,
     "Body must be a single JSON-RPC request or notification object"),
])
def test_an_unreadable_mcp_body_gets_a_constant_json_rpc_error_on_both_eras(
    service: RunningService, era: dict[str, str], body: bytes, code: int, message: str
) -> None:
    response = httpx2.post(service.mcp_url, content=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **era})
    assert response.status_code == 400
    assert response.json() == {"jsonrpc": "2.0", "id": None,
                               "error": {"code": code, "message": message}}
