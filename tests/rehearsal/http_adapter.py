"""The HTTP API in front of the rehearsed functions (moto has no API Gateway v2 routes).

A loopback HTTP server that turns each request into the API Gateway payload v2 event the
stack's routes deliver (``POST /mcp`` → the MCP endpoint function, ``/host/{proxy+}`` →
the host API function) and the function's answer back into HTTP. A pump thread stands in
for the event source mappings between requests (stream → projector, queue → notifier),
as AWS runs them beside the API.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.rehearsal.harness import Rehearsal


def apigw_event(request: Request, body: bytes) -> dict[str, Any]:
    """The API Gateway HTTP API (payload v2) event of one request."""
    path = request.url.path
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path,
        "rawQueryString": request.url.query,
        "headers": {k.lower(): v for k, v in request.headers.items()},
        "queryStringParameters": dict(request.query_params) or None,
        "requestContext": {
            "accountId": "123456789012", "apiId": "rehearsal", "stage": "$default",
            "domainName": request.headers.get("host", ""), "requestId": f"r{time.time_ns()}",
            "routeKey": "$default", "time": "", "timeEpoch": int(time.time() * 1000),
            "http": {"method": request.method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": request.headers.get("user-agent", "")},
        },
        "body": body.decode("utf-8") if body else None,
        "isBase64Encoded": False,
    }


def build_app(rehearsal: Rehearsal) -> Starlette:
    """The routes of the stack's HTTP API, each integrated with its function."""

    async def integrate(request: Request) -> Response:
        path = request.url.path
        if path.startswith("/host/"):
            function = "host_api"
        elif path == "/mcp" or path.startswith("/.well-known/oauth-protected-resource"):
            function = "mcp_endpoint"
        else:
            return Response(status_code=404)
        event = apigw_event(request, await request.body())
        answer = await run_in_threadpool(rehearsal.functions.run, function, event)
        body = answer.get("body") or ""
        raw = base64.b64decode(body) if answer.get("isBase64Encoded") else body.encode()
        return Response(raw, status_code=int(answer.get("statusCode", 200)),
                        headers=answer.get("headers") or {})

    return Starlette(routes=[Route("/{path:path}", integrate,
                                   methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"])])


def _pump(rehearsal: Rehearsal, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        with rehearsal.functions.lock:
            rehearsal.feed_projector()
            rehearsal.feed_notifier(wait_s=0)


@contextmanager
def serving(rehearsal: Rehearsal) -> Iterator[str]:
    """The HTTP API on a free loopback port (its base URL), with the event-source pump."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(build_app(rehearsal), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    stop = threading.Event()
    pump = threading.Thread(target=_pump, args=(rehearsal, stop), daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    pump.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        pump.join(timeout=30)
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
