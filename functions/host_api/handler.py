"""The host-only routes Lambda (API Gateway HTTP API, payload v2): ``/host/...``.

Confirmation requests and decisions (the Step Functions gate) and the adjudication of a
``pending_adjudication`` candidate. Authenticated by a host-operator token carrying the
``maintain`` permission; see docs/confirmation.md.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from engram_memory import bootstrap
from engram_memory.adapters.stepfunctions.clients import gate_clients
from engram_memory.domain.context import Scope
from engram_memory.gate.host_api import HostApi
from engram_memory.gate.wiring import build_host_api

logger = Logger(service="engram-host-api")
tracer = Tracer(service="engram-host-api")


def _adjudicate(scope: Scope, candidate_id: str, decision: str, approver: str) -> dict[str, Any]:
    # Resolved per call so the admission service is only built when this route is used.
    return bootstrap.admission_service().adjudicate(scope, candidate_id, decision, approver)


@cache
def _api() -> HostApi:
    """Built once per container, on first call."""
    settings = bootstrap.settings()
    return build_host_api(settings, gate_clients(settings), _adjudicate)


def reset_wiring() -> None:
    """Forget the cached wiring (tests change the environment between cases)."""
    _api.cache_clear()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One HTTP API v2 event → one v2 response."""
    return _api().handle(event)
