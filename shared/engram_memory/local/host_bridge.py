"""Serve the host routes locally: a Starlette request becomes an HTTP API v2 event.

The local service answers ``/host/*`` with the very same ``functions/host_api`` Lambda
handler API Gateway would invoke, so the host routes behave identically in both places.

API Gateway buffers (at most 10 MB of) a body before any Lambda runs; here nothing does, so
the bridge reads a body only for a request bearing a valid maintainer token, and at most
``MAX_BODY_BYTES`` of it. Any other request reaches the handler without its body and gets
the handler's own constant refusal (401/403/404); the listener then closes the connection
(``local/listener.py``), so the unread body is never received.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from engram_memory.gate.host_api import MAX_BODY_BYTES, TOO_LARGE
from engram_memory.host_token import (
    HostTokenVerifier,
    UntrustedContext,
    bearer_token,
    verify_maintainer_token,
)
from engram_memory.local.inprocess_invoker import LocalLambdaContext

HOST_PATH = "/host"
# Every method reaches the handler, so each gets its 401 before any 404 or 405 (docs/mcp.md).
_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
LambdaHandler = Callable[[dict[str, Any], Any], Any]


def apigw_event(request: Request, body: bytes) -> dict[str, Any]:
    """The HTTP API (payload 2.0) event API Gateway would send for ``request``."""
    host = request.headers.get("host", "127.0.0.1")
    path = request.url.path
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": request.url.query,
        "headers": {k.lower(): v for k, v in request.headers.items()},
        "queryStringParameters": _joined_parameters(request) or None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0],
            "http": {
                "method": request.method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": request.client.host if request.client else "127.0.0.1",
                "userAgent": request.headers.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": encoded,
    }
    if body:
        event["body"] = text
    if event["queryStringParameters"] is None:
        del event["queryStringParameters"]
    return event


def _joined_parameters(request: Request) -> dict[str, str]:
    """The query as API Gateway hands it over: repeated values joined with commas."""
    joined: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined


def _to_response(result: Any) -> Response:
    if not isinstance(result, dict) or "statusCode" not in result:
        return JSONResponse(result)
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode("utf-8")
    headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    return Response(raw, status_code=int(result["statusCode"]), headers=headers)


def _is_maintainer(request: Request, verifier: HostTokenVerifier) -> bool:
    try:
        verify_maintainer_token(bearer_token(request.headers.get("authorization")), verifier)
    except UntrustedContext:
        return False
    return True


async def capped_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The body, or None as soon as it (declared or as streamed) exceeds ``limit``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def host_routes(handler: LambdaHandler | None, verifier: HostTokenVerifier) -> list[BaseRoute]:
    """``/host/*`` routed to the host API Lambda handler (503 until it exists)."""

    async def endpoint(request: Request) -> Response:
        if handler is None:
            return JSONResponse({"message": "host routes unavailable"}, status_code=503)
        body = b""
        if _is_maintainer(request, verifier):
            read = await capped_body(request)
            if read is None:
                return JSONResponse({"error": TOO_LARGE}, status_code=413)
            body = read
        event = apigw_event(request, body)
        context = LocalLambdaContext("engram-host-api")
        result = await anyio.to_thread.run_sync(handler, event, context)
        return _to_response(result)

    return [
        Route(HOST_PATH, endpoint, methods=_METHODS),
        Route(HOST_PATH + "/{rest:path}", endpoint, methods=_METHODS),
    ]
