"""Hostile clients of the local listener, over raw sockets on 127.0.0.1 only.

uvicorn is configured exactly as the local service configures it (``listener_config``, on
``bind_listener``'s socket), here with a 0.5 s head deadline so the test stays short; the
app behind it records which requests reached it. Counts and waits are bounded.
"""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import pytest
import uvicorn
from engram_memory.local.listener import listener_config
from engram_memory.local.service import bind_listener
from starlette.types import Receive, Scope, Send

DEADLINE_S = 0.5
WAIT_S = 5.0  # far above the deadline: a socket still open by then was kept forever
SOCKETS = 20


@dataclass
class Recorder:
    """An ASGI app answering 200 ``ok`` (later on ``/slow``; 401 unread on ``/refuse``)."""

    paths: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"].removeprefix("lifespan.")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        self.paths.append(scope["path"])
        if scope["path"] == "/refuse":  # answers without reading the body, like a 401
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/slow":
            await asyncio.sleep(2 * DEADLINE_S)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def listener() -> Iterator[tuple[int, Recorder]]:
    app = Recorder()
    sock = bind_listener("127.0.0.1", 0)
    server = uvicorn.Server(listener_config(app, log_level="critical",
                                            header_timeout_s=DEADLINE_S,
                                            body_timeout_s=DEADLINE_S))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    try:
        yield int(sock.getsockname()[1]), app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def connections(port: int, count: int = 1) -> Iterator[list[socket.socket]]:
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=WAIT_S))
                 for _ in range(count)]
        yield socks


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a timeout fails the test)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def read_ok(sock: socket.socket) -> bytes:
    """One complete ``ok`` response (it may arrive in several segments)."""
    received = b""
    while not received.endswith(b"\r\n\r\nok"):
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    return received


def head(path: str = "/", extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()


def test_connections_that_never_finish_a_head_are_closed_at_the_deadline(
    listener: tuple[int, Recorder],
) -> None:
    port, app = listener
    started = time.monotonic()
    with connections(port, SOCKETS) as socks:
        for index, sock in enumerate(socks):
            if index % 2:  # half send nothing, half stop in the middle of a header
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slo")
        answers = [read_until_closed(sock) for sock in socks]
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers)
    assert time.monotonic() - started < WAIT_S
    assert app.paths == []


def drip(sock: socket.socket, data: bytes, every_s: float) -> int:
    """Send ``data`` a byte at a time; how many bytes went out before the server spoke."""
    for sent, byte in enumerate(data):
        if select.select([sock], [], [], 0)[0]:
            return sent
        sock.sendall(bytes([byte]))
        time.sleep(every_s)
    return len(data)


def test_a_head_dripped_a_byte_at_a_time_is_cut_off(listener: tuple[int, Recorder]) -> None:
    port, app = listener
    slow_head = head(extra="X-Pad: " + "a" * 200 + "\r\n")  # 11 s at 20 bytes/s
    with connections(port) as (sock,):
        sent = drip(sock, slow_head, every_s=0.05)
        assert sent < len(slow_head) // 4
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408")
    assert app.paths == []


def test_the_deadline_covers_the_head_only_and_each_kept_alive_request(
    listener: tuple[int, Recorder],
) -> None:
    port, app = listener
    with connections(port) as (sock,):
        sock.sendall(head("/slow"))  # the app takes twice the deadline: not a late head
        assert read_ok(sock).startswith(b"HTTP/1.1 200")
        time.sleep(DEADLINE_S * 2)  # idle between requests: uvicorn's keep-alive (5 s)
        sock.sendall(head("/second"))
        assert read_ok(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /third HTTP/1.1\r\n")  # a third head never completed
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408")
    assert app.paths == ["/slow", "/second"]


@pytest.mark.parametrize("order", ["cl-first", "te-first"])
def test_content_length_with_transfer_encoding_is_refused_and_the_connection_closed(
    listener: tuple[int, Recorder], order: str,
) -> None:
    port, app = listener
    framing = ["Content-Length: 5", "Transfer-Encoding: chunked"]
    if order == "te-first":
        framing.reverse()
    smuggled = head("/smuggled")
    request = (b"POST /front HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               + "".join(f"{line}\r\n" for line in framing).encode()
               + b"\r\n0\r\n\r\n" + smuggled)
    with connections(port) as (sock,):
        sock.sendall(request)
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400")
    assert answer.count(b"HTTP/1.1") == 1
    assert app.paths == []


def test_a_response_before_the_body_was_read_closes_the_connection(
    listener: tuple[int, Recorder],
) -> None:
    port, app = listener
    with connections(port) as (sock,):
        sock.sendall(b"POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     + f"Content-Length: {256 * 1024 * 1024}\r\n\r\n".encode()
                     + b" " * 65536)
        answer = read_until_closed(sock)  # not after 256 MiB: at once
    assert answer.startswith(b"HTTP/1.1 401")
    assert b"connection: close" in answer.lower()
    assert app.paths == ["/refuse"]


def test_a_body_trickled_in_is_cut_off_at_the_body_deadline(
    listener: tuple[int, Recorder],
) -> None:
    port, _ = listener
    started = time.monotonic()
    with connections(port, 4) as socks:
        for sock in socks:
            sock.sendall(b"POST /body HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 400\r\n\r\n")
        for _ in range(3):  # a byte now and then: never idle, never complete
            for sock in socks:
                sock.sendall(b"x")
            time.sleep(DEADLINE_S / 4)
        answers = [read_until_closed(sock) for sock in socks]
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"cache-control: no-store" in answer
    assert time.monotonic() - started < WAIT_S


@pytest.mark.parametrize("kib", [17, 20, 64])
def test_a_head_over_16_kib_sent_in_one_piece_is_refused(
    listener: tuple[int, Recorder], kib: int,
) -> None:
    port, app = listener
    with connections(port) as (sock,):
        sock.sendall(head("/big", extra="X-Pad: " + "a" * (kib * 1024) + "\r\n"))
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400")
    assert answer.endswith(b"Invalid HTTP request received.")
    assert app.paths == []


def test_a_head_just_under_16_kib_is_served(listener: tuple[int, Recorder]) -> None:
    port, app = listener
    with connections(port) as (sock,):
        sock.sendall(head("/fits", extra="X-Pad: " + "a" * (15 * 1024) + "\r\n"))
        assert read_ok(sock).startswith(b"HTTP/1.1 200")
    assert app.paths == ["/fits"]
