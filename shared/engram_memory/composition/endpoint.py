"""Composition root of the MCP endpoint: the one place an ``Endpoint`` is assembled.

The Lambda (functions/mcp_endpoint) invokes each tool's function by name; the local
service and the reliability harness pass the in-process invoker instead. Everything else
(the host-token verifier, the clock, the server) is the same object graph in all three.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from engram_memory import bootstrap
from engram_memory.adapters.clock import SystemClock
from engram_memory.adapters.lambda_invoker import InvocationDeadline, lambda_invoker
from engram_memory.host_token import verifier_from_settings
from engram_memory.mcp.server import Endpoint, build_server

if TYPE_CHECKING:
    from engram_memory.mcp.dispatch import ToolInvoker
    from engram_memory.settings import Settings

# Each tool invoke waits no longer than the endpoint's invocation has left (one attempt);
# the handler binds it to the Lambda context on every call.
DEADLINE = InvocationDeadline()


def build_endpoint(settings: Settings, invoker: ToolInvoker) -> Endpoint:
    """The endpoint of ``settings``' deployment reaching its tools through ``invoker``."""
    verifier = verifier_from_settings(settings, time.time)
    return Endpoint(verifier=lambda: verifier, invoker=invoker, clock_ms=SystemClock().now_ms)


@bootstrap.per_container
def server() -> Any:
    """The Lambda's MCP server: tools reached by ``lambda:Invoke`` of their functions."""
    settings = bootstrap.settings()
    invoker = lambda_invoker(settings.function_names, region=settings.region,
                             endpoint_url=settings.endpoint_url, deadline=DEADLINE)
    return build_server(build_endpoint(settings, invoker))
