"""The MCP endpoint Lambda: API Gateway HTTP API v2 event -> the MCP ASGI app.

The SDK's session manager can run only once, so each invocation builds a fresh, cheap,
stateless manager around the per-container ``Server`` (built once, lazily, by
``composition.endpoint``): two calls in one warm container work. Nothing here keeps state
between calls; each request carries its own host token.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory import bootstrap
from engram_memory.composition import endpoint
from engram_memory.mcp.apigw import call_asgi, public_base_url
from engram_memory.mcp.http_guard import security_for_event
from engram_memory.mcp.server import MCP_PATH, build_app, session_manager
from engram_memory.metrics_namespace import (
    METRICS_NAMESPACE,
    capture_cold_starts,
    discarded_when_disabled,
)
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-mcp-endpoint")
tracer = tracer_for("engram-mcp-endpoint")
# Cold starts only (the tools count calls and errors): the operator dashboard plots them.
metrics = Metrics(service="engram-mcp-endpoint", namespace=METRICS_NAMESPACE)


async def _handle(event: dict[str, Any]) -> dict[str, Any]:
    settings, server = bootstrap.settings(), endpoint.server()
    # API Gateway only routes requests for its own domains: the Host check allows the one it
    # matched (plus ENGRAM_ALLOWED_HOSTS); browser Origins only when configured.
    manager = session_manager(server, security_for_event(
        event, settings.allowed_hosts, settings.allowed_origins))
    # The domain API Gateway matched, never a Host header: docs/mcp.md.
    resource = settings.resource_url or public_base_url(event) + MCP_PATH
    app = build_app(manager, issuer=settings.host_issuer, resource_url=resource,
                    with_lifespan=False)
    async with manager.run():
        return await call_asgi(app, event)


# The event carries the bearer token: never logged, whatever POWERTOOLS_LOGGER_LOG_EVENT says.
@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@discarded_when_disabled(metrics)
@metrics.log_metrics(capture_cold_start_metric=capture_cold_starts())
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Serve one MCP HTTP request (both protocol eras) or the RFC 9728 metadata."""
    endpoint.DEADLINE.bind(context.get_remaining_time_in_millis)
    return asyncio.run(_handle(event))
