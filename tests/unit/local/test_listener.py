"""The local endpoint's listener: responses leave without waiting on Nagle's algorithm.

uvicorn serves the socket ``bind_listener`` returns through asyncio, which turns Nagle off
(TCP_NODELAY) on each accepted connection only when the listening socket says it is TCP.
With Nagle on, a keep-alive client waited ~40 ms (its delayed ACK) for the second half of
every response: the MCP SDK path measured 55 ms for a 10 ms call.
"""

from __future__ import annotations

import asyncio
import socket

from engram_memory.local.service import bind_listener


class _Accepted(asyncio.Protocol):
    def __init__(self, accepted: asyncio.Future[asyncio.BaseTransport]) -> None:
        self._accepted = accepted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._accepted.set_result(transport)


async def _accepted_nodelay(listener: socket.socket) -> int:
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[asyncio.BaseTransport] = loop.create_future()
    server = await loop.create_server(lambda: _Accepted(accepted), sock=listener)
    host, port = listener.getsockname()[:2]
    _, writer = await asyncio.open_connection(host, port)
    try:
        transport = await asyncio.wait_for(accepted, timeout=5)
        value = transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP,
                                                               socket.TCP_NODELAY)
        transport.close()
        return int(value)
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def test_connections_accepted_by_the_local_listener_have_nagle_turned_off() -> None:
    assert asyncio.run(_accepted_nodelay(bind_listener("127.0.0.1", 0))) != 0


def test_a_listener_that_does_not_say_tcp_would_keep_nagle_on() -> None:
    # The trap the listener avoids (so the test above cannot pass by accident).
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    plain.listen(8)
    assert asyncio.run(_accepted_nodelay(plain)) == 0
