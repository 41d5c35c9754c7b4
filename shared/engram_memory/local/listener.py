"""The local HTTP listener: uvicorn on h11, with the two limits uvicorn does not have.

- A request head (request line + headers) must arrive within ``HEADER_TIMEOUT_S`` of the
  connection opening, or of the first byte of a request on a kept-alive connection;
  otherwise the connection is answered 408 and closed. uvicorn only times out *idle*
  kept-alive connections, so a client that opens sockets and sends nothing, or drips a
  header a byte at a time, held them forever (300 stayed open).
- A request carrying both ``Content-Length`` and ``Transfer-Encoding`` is refused with 400
  and the connection closed (RFC 9112 §6.1 lets a server reject it; its framing is
  ambiguous, the stuff of request smuggling). h11 would take the chunked framing.
- A response sent before the request body was read (a refusal: 401, 413, …) closes the
  connection, so a refused body is never received to its end.
- A client that disconnects before its body is complete abandons the request: nobody is
  left to answer, so it ends there, quietly. Before, the SDK went on, met the disconnect
  in its body read and logged a 10-line traceback (with file paths) at ERROR.

h11 already refuses malformed request lines and headers, conflicting ``Content-Length``
values, a transfer coding other than ``chunked``, and a head larger than 16 KiB.
API Gateway does all of this in AWS (docs/local.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
"""Seconds a client has to send a complete request head."""
_REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                    b"content-length: 0\r\nconnection: close\r\n\r\n")


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on every request head."""

    header_timeout_s: float = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As uvicorn builds it; no head deadline is running yet."""
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A new connection owes its first request head within the deadline."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Start the deadline with a new request's first bytes; stop it once the head is in."""
        if self._head_deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """No deadline outlives its connection."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class uvicorn should build, with this head deadline."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": seconds})


class RefuseAmbiguousFraming:
    """ASGI middleware: ``Content-Length`` together with ``Transfer-Encoding`` is a 400."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 400 and close (the body is never read), or pass the request on."""
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                refusal = PlainTextResponse(
                    "Content-Length and Transfer-Encoding together are refused.",
                    status_code=400, headers={"connection": "close"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class CloseWhenBodyUnread:
    """ASGI middleware: a response sent before the request body was read closes the connection.

    An app may answer without reading a body (401 on a host route, 413 over the cap): the
    client would otherwise keep sending it, and uvicorn keep receiving it, to the end.
    """

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Track the body; add ``connection: close`` to an early response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        body_done = (b"transfer-encoding" not in headers
                     and headers.get(b"content-length", b"0") == b"0")

        async def tracked_receive() -> Message:
            nonlocal body_done
            message = await receive()
            body_done = body_done or not message.get("more_body", False)
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_done:
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, tracked_receive, closing_send)


class _Abandoned(Exception):
    """The client left before sending its whole body."""


class DropAbandonedRequests:
    """ASGI middleware: a disconnect before the request body is complete ends the request.

    The app's ``receive`` raises instead of handing over ``http.disconnect`` mid-body, and
    the exception is caught here: no handler goes on with half a body, no traceback is
    logged. A disconnect after a complete body (a client leaving while its answer is
    built) reaches the app as usual.
    """

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request; end it quietly if the client abandons its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = False

        async def guarded_receive() -> Message:
            nonlocal body_done
            message = await receive()
            if message["type"] == "http.request":
                body_done = not message.get("more_body", False)
            elif message["type"] == "http.disconnect" and not body_done:
                raise _Abandoned
            return message

        try:
            await self.app(scope, guarded_receive, send)
        except _Abandoned:
            return


def listener_config(app: ASGIApp, *, log_level: str,
                    header_timeout_s: float = HEADER_TIMEOUT_S) -> uvicorn.Config:
    """How the local service runs uvicorn (h11, head deadline, framing refusal)."""
    return uvicorn.Config(DropAbandonedRequests(RefuseAmbiguousFraming(CloseWhenBodyUnread(app))),
                          log_level=log_level, lifespan="on",
                          http=with_header_timeout(header_timeout_s))
