"""A small translation between API Gateway HTTP API (payload 2.0) events and ASGI.

Enough for the MCP endpoint, which only serves buffered JSON responses: one request body
in, one response out. No third-party adapter is needed for that, and keeping it here
means the translation is tested with our own event fixtures.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import anyio
from starlette.types import ASGIApp, Message

_TEXT_TYPES = ("application/json", "text/", "application/problem+json")


def named_stage(event: Mapping[str, Any]) -> str:
    """The stage name when it prefixes the path (``$default`` does not)."""
    stage = str(event.get("requestContext", {}).get("stage") or "")
    return "" if stage in ("", "$default") else stage


def request_path(event: Mapping[str, Any]) -> str:
    """The path the app routes on, without a named stage prefix."""
    path = str(event.get("rawPath") or "/")
    stage = named_stage(event)
    if stage and (path == f"/{stage}" or path.startswith(f"/{stage}/")):
        path = path[len(stage) + 1:] or "/"
    return path


def public_base_url(event: Mapping[str, Any]) -> str:
    """``https://<domain>[/<stage>]``: where clients reach this API."""
    domain = str(event.get("requestContext", {}).get("domainName") or "localhost")
    stage = named_stage(event)
    return f"https://{domain}" + (f"/{stage}" if stage else "")


def event_body(event: Mapping[str, Any]) -> bytes:
    """The raw request body (decoding base64 when API Gateway encoded it)."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body)
    return str(body).encode("utf-8")


def wire_bytes(text: str) -> bytes:
    """Header, cookie or query text back as the bytes an ASGI app expects.

    API Gateway hands over header values as JSON strings, and a client may send any octets
    (``User-Agent: agent/1.0 ☃``): Latin-1 where it fits, else UTF-8, with a lone
    surrogate replaced, so no value a client chooses can make the translation raise.
    """
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace")


def asgi_scope(event: Mapping[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP scope of an HTTP API v2 event."""
    context = event.get("requestContext", {})
    http = context.get("http", {})
    headers = [(wire_bytes(str(k).lower()), wire_bytes(str(v)))
               for k, v in (event.get("headers") or {}).items()]
    cookies = event.get("cookies") or []
    if cookies:
        headers.append((b"cookie", wire_bytes("; ".join(map(str, cookies)))))
    path = request_path(event)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": str(http.get("method", "GET")).upper(),
        "scheme": "https",
        "path": path,
        "raw_path": path.encode("utf-8", errors="replace"),
        "root_path": "",
        "query_string": wire_bytes(str(event.get("rawQueryString") or "")),
        "headers": headers,
        "client": (str(http.get("sourceIp", "0.0.0.0")), 0),  # noqa: S104 - a label, not a bind
        "server": (str(context.get("domainName", "localhost")), 443),
    }


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _response(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    out_headers: dict[str, str] = {}
    cookies: list[str] = []
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "set-cookie":
            cookies.append(value)
        else:
            out_headers[name] = f"{out_headers[name]},{value}" if name in out_headers else value
    content_type = out_headers.get("content-type", "")
    is_text = not body or content_type.startswith(_TEXT_TYPES) or (
        not content_type and _is_utf8(body))
    response: dict[str, Any] = {
        "statusCode": status,
        "headers": out_headers,
        "body": body.decode("utf-8") if is_text else base64.b64encode(body).decode("ascii"),
        "isBase64Encoded": not is_text,
    }
    if cookies:
        response["cookies"] = cookies
    return response


async def call_asgi(app: ASGIApp, event: Mapping[str, Any]) -> dict[str, Any]:
    """Run one HTTP API v2 event through ``app`` and return the v2 response dict."""
    body = event_body(event)
    done = anyio.Event()
    sent_body = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        # The client stays connected until the response is complete, as a real one would.
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(asgi_scope(event), receive, send)
    finally:
        done.set()
    return _response(status, headers, b"".join(chunks))
