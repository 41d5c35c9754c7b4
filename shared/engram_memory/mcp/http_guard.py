"""HTTP-level rules every route of the endpoint app shares (docs/mcp.md).

- DNS-rebinding protection on every route: the SDK checks ``Host`` and ``Origin`` on
  ``/mcp`` only; the metadata and the host routes get the same check, with the same
  settings, before anything else runs (the host_api Lambda through ``event_refusal``).
- ``/mcp`` is POST only. The endpoint is stateless: there is no server-initiated stream to
  open with GET and no session to end with DELETE, so both (and any other method) are
  405 before the SDK sees them (its GET would otherwise hold an SSE stream open forever,
  token or not).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server import transport_security
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from engram_memory.mcp.apigw import asgi_scope

METHOD_NOT_ALLOWED_BODY = json.dumps({
    "jsonrpc": "2.0", "id": None,
    "error": {"code": -32600, "message": "Method Not Allowed: this endpoint is POST only"},
}, separators=(",", ":"))

REFUSAL_LOGS = (
    ("Invalid Host header", "Refused a request: Host header not allowed"),
    ("Missing Host header", "Refused a request: no Host header"),
    ("Invalid Origin header", "Refused a request: Origin header not allowed"),
)
OTHER_REFUSAL_LOG = "Refused a request: transport security check"


class ConstantRefusalLog(logging.Filter):
    """Rewrites every record of the SDK's transport-security logger to a constant message.

    The constant is chosen by the message's fixed prefix; the request-supplied remainder
    and any arguments are dropped, and an unknown message gets the generic constant, so
    no header value a client sends can reach a log line whatever the SDK's wording.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record (its level too), with a constant message and no arguments."""
        text = str(record.msg)
        record.msg = next((constant for prefix, constant in REFUSAL_LOGS
                           if text.startswith(prefix)), OTHER_REFUSAL_LOG)
        record.args = None
        return True


def quiet_refusal_logs() -> None:
    """Install :class:`ConstantRefusalLog` on the SDK's logger (once per process)."""
    sdk_logger = logging.getLogger(transport_security.__name__)
    if not any(isinstance(f, ConstantRefusalLog) for f in sdk_logger.filters):
        sdk_logger.addFilter(ConstantRefusalLog())


quiet_refusal_logs()  # every user of the SDK's check imports this module first


class HostOriginGuard:
    """ASGI middleware: the SDK's Host/Origin validation in front of every route."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings | None) -> None:
        """Wrap ``app``; ``security`` None means the SDK default (protection off)."""
        self.app = app
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a disallowed Host (421) or Origin (403) without reading the body."""
        if scope["type"] == "http":
            refusal = await self._check.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class PostOnly:
    """The ``/mcp`` route: POST goes to the SDK, any other method is a 405."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap the SDK's streamable HTTP app."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch POST; answer 405 (``Allow: POST``) to anything else."""
        if scope["type"] == "http" and scope["method"] != "POST":
            response = Response(METHOD_NOT_ALLOWED_BODY, status_code=405,
                                media_type="application/json", headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def security_for_event(event: Mapping[str, Any], allowed_hosts: Sequence[str],
                       allowed_origins: Sequence[str]) -> TransportSecuritySettings:
    """Host/Origin settings of a Lambda behind API Gateway.

    Allowed hosts: the domain API Gateway matched (``requestContext.domainName``, one of
    the API's own: it routes no other) plus ``allowed_hosts`` (``ENGRAM_ALLOWED_HOSTS``);
    allowed origins: ``allowed_origins`` (``ENGRAM_ALLOWED_ORIGINS``; none by default: a
    browser page is refused).
    """
    domain = str(event.get("requestContext", {}).get("domainName") or "")
    hosts = [*([domain] if domain else []), *allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=list(allowed_origins))


def event_refusal(event: Mapping[str, Any],
                  security: TransportSecuritySettings) -> dict[str, Any] | None:
    """The v2 response refusing an event's Host (421) or Origin (403); None when allowed."""
    checked = TransportSecurityMiddleware(security).validate_request(Request(asgi_scope(event)))
    refusal = asyncio.run(checked)  # awaits nothing: a Lambda handler has no loop running
    if refusal is None:
        return None
    return {"statusCode": refusal.status_code, "headers": {"content-type": "text/plain"},
            "body": bytes(refusal.body).decode("utf-8")}
