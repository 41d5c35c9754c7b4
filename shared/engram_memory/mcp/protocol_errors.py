"""Constant JSON-RPC errors for bodies the SDK cannot read, on both protocol eras.

The SDK's 2026-era path answers an unparsable or malformed body with constant errors; its
initialize-era path puts the library's text in the message (``Parse error: EOF while
parsing…``, ``Validation error: 4 validation errors for union[…] … errors.pydantic.dev…``),
before any token is looked at. This ASGI wrapper around ``/mcp`` replaces the message of
every transport-level JSON-RPC error (an HTTP 400 whose error has ``id: null``: the request
could not be read as one message) by the 2026 era's constant for its kind, byte for byte:

- ``-32700`` ``Parse error`` (not JSON);
- ``-32600`` ``Body must be a single JSON-RPC request or notification object`` (JSON, but
  not one request or notification: ``null``, an array, a wrong-typed member; the
  initialize era called this ``-32602``).

Errors answering a request that was read (they carry its ``id``) are the server's own
constants and pass unchanged, as does every other response.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _constant(code: int, message: str) -> bytes:
    # The 2026-era path's own serialization (key order included).
    return json.dumps({"jsonrpc": "2.0", "error": {"code": code, "message": message},
                       "id": None}, separators=(",", ":")).encode("utf-8")


PARSE_ERROR_BODY = _constant(PARSE_ERROR, "Parse error")
INVALID_BODY = _constant(INVALID_REQUEST,
                         "Body must be a single JSON-RPC request or notification object")


def constant_body(body: bytes) -> bytes:
    """The constant for a transport-level JSON-RPC error body; ``body`` when it is not one."""
    try:
        message: Any = json.loads(body)
    except ValueError:
        return body
    if not (isinstance(message, dict) and "id" in message and message["id"] is None
            and isinstance(message.get("error"), dict)):
        return body
    return PARSE_ERROR_BODY if message["error"].get("code") == PARSE_ERROR else INVALID_BODY


class ConstantProtocolErrors:
    """ASGI wrapper: a 400 JSON-RPC error with ``id: null`` gets the era-independent constant."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the SDK's ``/mcp`` app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hold a 400's body until complete, then send it with a constant message."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        held: list[bytes] = []

        async def rewriting_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message.get("status") == 400:
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            held.append(bytes(message.get("body", b"")))
            if message.get("more_body", False):
                return
            body = constant_body(b"".join(held))
            headers = [(name, value) for name, value in start.get("headers", [])
                       if name.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode("ascii")))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, rewriting_send)
