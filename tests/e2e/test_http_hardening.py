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


def _request(service: RunningService, method: str, path: str, headers: dict[str, str],
             body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{service.port}",
             f"Content-Length: {len(body)}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize(("method", "path", "who", "body", "status"), [
    ("POST", "/mcp", "none", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 200),
    ("POST", "/mcp", "none", b"{", 400),
    ("GET", "/mcp", "none", b"", 405),
    ("PUT", "/mcp", "none", b"", 405),
    ("GET", "/host/confirmations?workspace_id=ws1&state=pending", "maintainer", b"", 200),
    ("GET", "/host/adjudications?workspace_id=ws1", "maintainer", b"", 200),
    ("GET", "/host/confirmations?workspace_id=ws1&state=pending", "none", b"", 401),
    ("GET", "/host/nowhere", "maintainer", b"", 404),
    ("POST", "/host/confirmations", "maintainer", b"{not json", 400),
])
def test_every_mcp_and_host_response_is_no_store(
    service: RunningService, method: str, path: str, who: str, body: bytes, status: int,
) -> None:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if who == "maintainer":
        headers["Authorization"] = f"Bearer {maintainer(service)}"
    answer = exchange(service, _request(service, method, path, headers, body))
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:80]
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert b"\r\ncache-control: no-store" in head


def test_a_body_trickled_in_gets_408_and_the_connection_closes(
    service: RunningService, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The running service's protocol class, with a short body deadline for this test only.
    monkeypatch.setattr(service.server.config.http_protocol_class, "body_timeout_s", 0.5)
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", service.port), timeout=WAIT_S) as one, \
         socket.create_connection(("127.0.0.1", service.port), timeout=WAIT_S) as two:
        for sock in (one, two):
            sock.sendall(head + b'{"jsonrpc"')
        answers = []
        for sock in (one, two):
            received = b""
            while chunk := sock.recv(65536):  # the server closes: a timeout fails the test
                received += chunk
            answers.append(received)
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"content-length: 0" in answer


@pytest.mark.parametrize("kib", [20, 64])
def test_a_head_over_16_kib_in_one_piece_is_refused(service: RunningService, kib: int) -> None:
    answer = exchange(service, _request(service, "GET", "/host/confirmations?workspace_id=ws1",
                                        {"X-Pad": "a" * (kib * 1024)}))
    assert answer.startswith(b"HTTP/1.1 400")
    assert answer.endswith(b"Invalid HTTP request received.")


def test_a_repeated_query_parameter_is_refused(service: RunningService) -> None:
    bearer = {"Authorization": f"Bearer {maintainer(service)}"}
    for query in ("workspace_id=ws1&workspace_id=ws2&state=pending",
                  "workspace_id=ws2&workspace_id=ws1&state=pending"):
        response = httpx2.get(f"{service.base_url}/host/confirmations?{query}", headers=bearer)
        assert response.status_code == 400
        assert response.json() == {"error": {"code": "INVALID_REQUEST",
                                             "message": "The request body is invalid."}}


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/host/confirmations"), ("GET", "/host/nowhere"), ("PUT", "/host/confirmations"),
    ("OPTIONS", "/host/confirmations"), ("GET", "/host"),
])
def test_an_anonymous_caller_cannot_tell_real_host_routes_from_unknown_ones(
    service: RunningService, method: str, path: str,
) -> None:
    response = httpx2.request(method, service.base_url + path)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
