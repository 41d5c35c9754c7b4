"""Lambda entry point of engram_memory_request_admission: internal event in, envelope out.

Two events reach this function, the only one allowed to decrypt a candidate: the MCP
endpoint's ``ToolInvocation`` (the agent asks the host policy) and the host API's
``AdjudicationInvocation`` (a maintainer settles a ``pending_adjudication`` candidate).
An event carrying ``kind`` is read as an adjudication only; the agent path never sends one.
"""

from __future__ import annotations

from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.context import Scope, Tool
from engram_memory.runtime import (
    Adjudicator,
    is_adjudication,
    logger,
    metrics,
    run_adjudication,
    run_tool,
    tracer,
)


def _serves(scope: Scope) -> bool:
    """The adjudicated scope is this deployment's tenant and one of its workspaces."""
    settings = bootstrap.settings()
    allowed = settings.workspace_ids
    return scope.tenant_id == settings.tenant_id and (
        not allowed or scope.workspace_id in allowed)


def _adjudicator() -> Adjudicator:
    return bootstrap.admission_service().adjudicate


# clear_state: local mode runs every handler on one shared logger; no stale keys.
@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Run engram_memory_request_admission, or the host's adjudication, for one event."""
    if is_adjudication(event):
        return run_adjudication(event, _adjudicator, _serves)
    return run_tool(Tool.REQUEST_ADMISSION, event, lambda: bootstrap.admission_service().execute)
