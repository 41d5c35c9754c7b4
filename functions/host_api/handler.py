"""The host-only routes Lambda (API Gateway HTTP API, payload v2): ``/host/...``.

Confirmation requests and decisions (the Step Functions gate) and the adjudication of a
``pending_adjudication`` candidate. Authenticated by a host-operator token carrying the
``maintain`` permission; see docs/confirmation.md. Adjudication is not done here: it is
sent to the request_admission Lambda (the only function that may decrypt a candidate).
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory.adapters.lambda_invoker import InvocationDeadline
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.gate.host_api import HostApi
from engram_memory.gate.wiring import adjudication_invoker, build_host_api
from engram_memory.mcp.http_guard import event_refusal, security_for_event
from engram_memory.settings import Settings
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-host-api")
tracer = tracer_for("engram-host-api")
# The adjudication invoke waits no longer than this invocation has left.
DEADLINE = InvocationDeadline()


@cache
def _api() -> HostApi:
    """Built once per container, on first call."""
    settings = Settings.from_env()
    return build_host_api(settings, gate_clients(settings),
                          adjudication_invoker(settings, os.environ, DEADLINE))


def reset_wiring() -> None:
    """Forget the cached wiring (tests change the environment between cases)."""
    _api.cache_clear()


@logger.inject_lambda_context(log_event=False, clear_state=True)
# Responses carry admission outcomes and confirmation details: never into a trace.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One HTTP API v2 event → one v2 response (Host/Origin checked first)."""
    DEADLINE.bind(context.get_remaining_time_in_millis)
    refusal = event_refusal(event, security_for_event(event, os.environ))
    return refusal if refusal is not None else _api().handle(event)
