"""The local HTTP listener: uvicorn on h11, with the limits uvicorn does not have.

- A request head (request line + headers) must arrive within ``HEADER_TIMEOUT_S`` of the
  connection opening, or of the first byte of a request on a kept-alive connection;
  otherwise the connection is answered 408 and closed. uvicorn only times out *idle*
  kept-alive connections, so a client that opens sockets and sends nothing, or drips a
  header a byte at a time, held them forever (300 stayed open).
- A request body must arrive whole within ``BODY_TIMEOUT_S`` of its head; otherwise 408
  (unless a response already began) and the connection is closed: a body trickled in a
  byte at a time held a connection for as long as its client liked (40 of 40 after 20 s).
- A head over ``MAX_HEAD_BYTES`` is refused with uvicorn's constant 400 however it arrives:
  h11 bounds only a head still incomplete, so one sent whole in one segment passed.
- A request carrying both ``Content-Length`` and ``Transfer-Encoding`` is refused with 400
  and the connection closed (RFC 9112 §6.1 lets a server reject it; its framing is
  ambiguous, the stuff of request smuggling). h11 would take the chunked framing.
- A response sent before the request body was read (a refusal: 401, 413, …) closes the
  connection, so a refused body is never received to its end.
- A client that disconnects before its body is complete abandons the request: nobody is
  left to answer, so it ends there, quietly. Before, the SDK went on, met the disconnect
  in its body read and logged a 10-line traceback (with file paths) at ERROR.

h11 already refuses malformed request lines and headers, conflicting ``Content-Length``
values, a transfer coding other than ``chunked``, and an incomplete head over 16 KiB.
Every response the listener writes itself carries ``Cache-Control: no-store``, as every
response of the app does (``mcp/no_store.py``). API Gateway does all of this in AWS (docs/local.md).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import h11
import uvicorn
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from engram_memory.mcp.no_store import NO_STORE, NoStore

HEADER_TIMEOUT_S = 10.0
"""Seconds a client has to send a complete request head."""
BODY_TIMEOUT_S = 15.0
"""Seconds a client has, once its head is in, to send the whole request body."""
MAX_HEAD_BYTES = 16 * 1024
"""Largest request head (request line + headers), as h11 bounds an incomplete one."""
_END_OF_HEAD = re.compile(rb"\n\r?\n")  # h11's own end-of-head rule
_REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                    b"cache-control: no-store\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
_INVALID_TEXT = b"Invalid HTTP request received."  # uvicorn's own 400 body, kept constant
_INVALID_REQUEST = (b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
                    b"cache-control: no-store\r\nconnection: close\r\n"
                    + f"content-length: {len(_INVALID_TEXT)}\r\n\r\n".encode("ascii")
                    + _INVALID_TEXT)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on every request head and body, and a head
    size bound that holds however the head arrives."""

    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As uvicorn builds it; no deadline is running yet."""
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None
        self._head_seen = b""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A new connection owes its first request head within the deadline."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Bound the head (size and time), then the body (time); h11 does the parsing."""
        if self.conn.their_state is h11.IDLE:
            if self._head_deadline is None:
                self._arm()
            if self._head_too_large(data):
                self._disarm()
                self.send_400_response(_INVALID_TEXT.decode("ascii"))
                return
        super().data_received(data)
        state = self.conn.their_state
        if state is not h11.IDLE:
            self._disarm()
            self._head_seen = b""
        if state is h11.SEND_BODY:
            if self._body_deadline is None:
                self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_late)
        else:
            self._disarm_body()

    def connection_lost(self, exc: Exception | None) -> None:
        """No deadline outlives its connection."""
        self._disarm()
        self._disarm_body()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's refusal of a malformed request, with a constant body and ``no-store``."""
        if not self.transport.is_closing():
            self.transport.write(_INVALID_REQUEST)
            self.transport.close()

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the head being received is over ``MAX_HEAD_BYTES`` (h11 checks only a
        head still incomplete: one sent whole, in one segment, passed)."""
        seen = self._head_seen + data
        end = _END_OF_HEAD.search(seen, max(0, len(self._head_seen) - 2))
        if (end.end() if end else len(seen)) > MAX_HEAD_BYTES:
            return True
        self._head_seen = b"" if end else seen
        return False

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _disarm_body(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()

    def _body_late(self) -> None:
        """The body is still incomplete: 408 (unless a response already began), and close.

        Closing ends the request: the app's next read is a disconnect mid-body, which
        ``DropAbandonedRequests`` ends quietly.
        """
        self._body_deadline = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        cycle = getattr(self, "cycle", None)
        if cycle is None or not cycle.response_started:
            self.transport.write(_REQUEST_TIMEOUT)
        self.transport.close()


def with_header_timeout(seconds: float,
                        body_seconds: float = BODY_TIMEOUT_S) -> type[HeaderTimeoutProtocol]:
    """The protocol class uvicorn should build, with these head and body deadlines."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,),
                {"header_timeout_s": seconds, "body_timeout_s": body_seconds})


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
                    status_code=400, headers={"connection": "close", "cache-control": NO_STORE})
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
                    header_timeout_s: float = HEADER_TIMEOUT_S,
                    body_timeout_s: float = BODY_TIMEOUT_S) -> uvicorn.Config:
    """How the local service runs uvicorn (h11, head and body deadlines, head bound,
    framing refusal, ``no-store`` on every response that names no caching)."""
    guarded = NoStore(DropAbandonedRequests(RefuseAmbiguousFraming(CloseWhenBodyUnread(app))))
    return uvicorn.Config(guarded, log_level=log_level, lifespan="on",
                          http=with_header_timeout(header_timeout_s, body_timeout_s))
