"""The host-only routes Lambda (API Gateway HTTP API, payload v2): ``/host/...``.

Confirmation requests and decisions (the Step Functions gate) and the adjudication of a
``pending_adjudication`` candidate. Authenticated by a host-operator token carrying the
``maintain`` permission; see docs/confirmation.md. Adjudication is not done here: it is
sent to the request_admission Lambda (the only function that may decrypt a candidate).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory import bootstrap
from engram_memory.composition import host_api
from engram_memory.gate.host_api import metrics
from engram_memory.mcp.http_guard import event_refusal, security_for_event
from engram_memory.mcp.no_store import no_store
from engram_memory.metrics_namespace import capture_cold_starts, discarded_when_disabled
from engram_memory.tracing import tracer_for

logger = Logger(service="engram-host-api")
tracer = tracer_for("engram-host-api")


@logger.inject_lambda_context(log_event=False, clear_state=True)
# Responses carry admission outcomes and confirmation details: never into a trace.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@discarded_when_disabled(metrics)
@metrics.log_metrics(capture_cold_start_metric=capture_cold_starts())
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One HTTP API v2 event → one v2 response (Host/Origin checked first; never cached)."""
    host_api.DEADLINE.bind(context.get_remaining_time_in_millis)
    settings = bootstrap.settings()
    refusal = event_refusal(event, security_for_event(
        event, settings.allowed_hosts, settings.allowed_origins))
    return no_store(refusal if refusal is not None else host_api.service().handle(event))
