"""``Cache-Control: no-store`` on every response that names no caching of its own.

Responses of ``/mcp`` and ``/host`` carry memory content, decrypted held candidates and
waiting lists, and their refusals are per-token: no browser or shared cache may keep one
(docs/mcp.md, "Transport security and metadata"). Only the RFC 9728 metadata, which is
public and the same for everyone, says otherwise (``public, max-age=3600``), and keeps its
own header.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_STORE: Final = "no-store"
_HEADER: Final = b"cache-control"


class NoStore:
    """ASGI middleware: add ``Cache-Control: no-store`` to a response that has none."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; mark its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name.lower() == _HEADER for name, _ in headers):
                    headers.append((_HEADER, NO_STORE.encode("ascii")))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, marking_send)


def no_store(response: dict[str, Any]) -> dict[str, Any]:
    """An API Gateway v2 response dict with ``cache-control: no-store`` unless it has one."""
    headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    if not any(name.lower() == "cache-control" for name in headers):
        headers["cache-control"] = NO_STORE
    return {**response, "headers": headers}
