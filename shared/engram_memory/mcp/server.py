"""The MCP endpoint: the mcp 2.x low-level ``Server`` and its stateless JSON HTTP app.

Both protocol eras are served by one app: the SDK's session manager routes a request whose
``MCP-Protocol-Version`` header names 2026-07-28 to the per-request (stateless) path, and
everything else to the legacy initialize-era path, which runs here in stateless JSON mode
(a fresh transport per POST, no ``Mcp-Session-Id``). Every request that touches memory
(tools/list, tools/call) verifies the host token from its own ``Authorization`` header, so
no state is kept between requests and any warm container can answer any call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from engram_memory import CONTRACT_VERSION, PROVIDER
from engram_memory.domain.context import InvocationContext, Tool
from engram_memory.host_token import (
    HostTokenVerifier,
    UntrustedContext,
    bearer_token,
    verify_agent_token,
)
from engram_memory.mcp.dispatch import ClockMs, ToolInvoker, dispatch, protocol_refusal
from engram_memory.mcp.http_guard import HostOriginGuard, PostOnly
from engram_memory.mcp.no_store import NoStore
from engram_memory.mcp.protocol_errors import ConstantProtocolErrors
from engram_memory.mcp.purpose_binding import RequestAuthorization, bound_purpose
from engram_memory.mcp.tools import granted_tools, input_schema_by_name, instructions_for

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"
UNTRUSTED_MESSAGE = UntrustedContext.message
UNKNOWN_TOOL_MESSAGE = "Unknown tool"

VerifierSource = Callable[[], HostTokenVerifier]
"""Returns the verifier to use now (settings are read once per container by the caller)."""


def _untrusted() -> MCPError:
    return MCPError(code=types.INTERNAL_ERROR, message=UNTRUSTED_MESSAGE)


def _unknown_tool() -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=UNKNOWN_TOOL_MESSAGE)


def context_of(
    ctx: ServerRequestContext[Any, Any], verifier: HostTokenVerifier
) -> InvocationContext:
    """The verified host context of the HTTP request behind ``ctx`` (or -32603)."""
    request = ctx.request
    if not isinstance(request, Request):
        raise _untrusted()
    try:
        return verify_agent_token(bearer_token(request.headers.get("authorization")), verifier)
    except UntrustedContext:
        raise _untrusted() from None


def envelope_result(envelope: dict[str, Any]) -> types.CallToolResult:
    """The MCP result of an envelope: structuredContent, identical text copy, isError."""
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=not envelope["ok"],
    )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The wiring of one endpoint: how to verify, how to invoke, which clock."""

    verifier: VerifierSource
    invoker: ToolInvoker
    clock_ms: ClockMs

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Only the granted tools; no capability at all means memory is disabled."""
        context = context_of(ctx, self.verifier())
        return types.ListToolsResult(tools=granted_tools(context.capabilities))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Verify, authorize the tool, check purpose and confirmation, dispatch, wrap."""
        context = context_of(ctx, self.verifier())
        tool = Tool.from_mcp_name(params.name)
        if tool is None or tool not in context.capabilities:
            raise _unknown_tool()
        arguments: dict[str, Any] = dict(params.arguments or {})
        if protocol_refusal(tool, arguments, context):
            raise _untrusted()
        envelope = await anyio.to_thread.run_sync(
            dispatch, tool, context, arguments, self.invoker, self.clock_ms
        )
        return envelope_result(envelope)


class MemoryServer(Server[Any]):
    """The low-level server whose instructions name the purpose of the current request.

    The SDK reads ``instructions`` while it answers ``initialize`` / ``server/discover``,
    inside the HTTP request (mcp/purpose_binding.py), so the text follows that request's
    verified token; the value given to the constructor is not used.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        super().__init__(
            "engram-memory",
            version=CONTRACT_VERSION,
            title="Engram memory",
            description=f"{PROVIDER} governed long-term memory",
            on_list_tools=endpoint.list_tools,
            on_call_tool=endpoint.call_tool,
            # A static lookup: Mcp-Param header checks never run the (token-checked) listing.
            get_tool_input_schema=input_schema_by_name,
        )

    @property
    def instructions(self) -> str:
        """The instructions for the current request (naming its bound purpose, if any)."""
        return instructions_for(bound_purpose(self._endpoint.verifier()))

    @instructions.setter
    def instructions(self, _value: str | None) -> None:
        """Ignored: the text is derived per request."""


def build_server(endpoint: Endpoint) -> Server[Any]:
    """The low-level MCP server of the six memory tools."""
    return MemoryServer(endpoint)


def transport_security(
    allowed_hosts: Sequence[str], allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """DNS-rebinding protection: only these Host (and Origin) header values are served."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(allowed_hosts),
        allowed_origins=list(allowed_origins),
    )


def session_manager(
    server: Server[Any], security: TransportSecuritySettings
) -> StreamableHTTPSessionManager:
    """A stateless, JSON-response session manager (one-shot: run() once per instance)."""
    return StreamableHTTPSessionManager(
        app=server, json_response=True, stateless=True, security_settings=security
    )


def protected_resource_metadata(resource: str, issuer: str) -> dict[str, Any]:
    """RFC 9728 metadata: the host issuer is the only authorization server."""
    return {
        "resource": resource,
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_signing_alg_values_supported": ["EdDSA", "ES256"],
        "resource_name": "Engram memory (MCP)",
    }


def well_known_routes(issuer: str, resource_url: str) -> list[BaseRoute]:
    """The RFC 9728 routes (plain and path-suffixed for ``/mcp``)."""

    async def metadata(_: Request) -> JSONResponse:
        # From configuration only: a request's Host header never names the resource.
        return JSONResponse(
            protected_resource_metadata(resource_url, issuer),
            headers={"Cache-Control": "public, max-age=3600"},
        )

    return [
        Route(WELL_KNOWN_PATH, metadata, methods=["GET"]),
        Route(WELL_KNOWN_PATH + MCP_PATH, metadata, methods=["GET"]),
    ]


def build_app(
    manager: StreamableHTTPSessionManager,
    *,
    issuer: str,
    resource_url: str,
    extra_routes: Sequence[BaseRoute] = (),
    with_lifespan: bool = True,
) -> Starlette:
    """The ASGI app: ``/mcp``, the well-known metadata and any extra (host) routes.

    The manager's Host/Origin settings guard every route (``mcp/http_guard.py``); a body
    ``/mcp`` cannot read gets a constant JSON-RPC error on both eras
    (``mcp/protocol_errors.py``); every response, refusals included, is ``no-store`` unless
    it names its own caching (``mcp/no_store.py``).
    """
    routes: list[BaseRoute] = [
        Route(MCP_PATH, PostOnly(RequestAuthorization(
            ConstantProtocolErrors(StreamableHTTPASGIApp(manager))))),
        *well_known_routes(issuer, resource_url),
        *extra_routes,
    ]
    guard = [Middleware(NoStore),
             Middleware(HostOriginGuard, security=manager.security_settings)]
    if not with_lifespan:
        return Starlette(routes=routes, middleware=guard)
    return Starlette(routes=routes, middleware=guard, lifespan=lambda _app: manager.run())
