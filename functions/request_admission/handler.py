"""Lambda entry point of engram_memory_request_admission: internal event in, envelope out.

Two events reach this function, the only one allowed to decrypt a candidate: the MCP
endpoint's ``ToolInvocation`` (the agent asks the host policy) and the host API's
``AdjudicationInvocation`` (a maintainer settles a ``pending_adjudication`` candidate).
An event carrying ``kind`` is read as an adjudication only; the agent path never sends one.
An adjudication must carry a maintainer token this function verifies itself: the MCP
endpoint's role may invoke this function too, so the caller's IAM identity proves nothing.
"""

from __future__ import annotations

import time
from typing import Any

from engram_memory import bootstrap
from engram_memory.composition import admission
from engram_memory.contract import registry
from engram_memory.contract.invocation import INSPECT
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import Unauthorized
from engram_memory.host_token import (
    UntrustedContext,
    verifier_from_settings,
    verify_maintainer_token,
)
from engram_memory.runtime import (
    Adjudicator,
    ToolBinding,
    deployment_serves,
    is_adjudication,
    lambda_entry,
    run_adjudication,
    run_tool,
)

BINDING = ToolBinding(registry.REQUEST_ADMISSION, admission.service)


def _adjudicator() -> Adjudicator:
    service = admission.service()

    def adjudicate(scope: Scope, candidate_id: str, decision: str,
                   approver: str) -> dict[str, Any]:
        if decision == INSPECT:  # the reviewer reads; nothing is decided
            return service.inspect(scope, candidate_id)
        return service.adjudicate(scope, candidate_id, decision, approver)

    return adjudicate


def _maintainer_tenant(token: str) -> str:
    """The tenant of a verified maintainer token (the host API's very verifier)."""
    verifier = verifier_from_settings(bootstrap.settings(), time.time)
    try:
        return verify_maintainer_token(token, verifier).tenant_id
    except UntrustedContext:
        raise Unauthorized from None


@lambda_entry
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Run engram_memory_request_admission, or the host's adjudication, for one event."""
    if is_adjudication(event):
        return run_adjudication(event, _adjudicator, deployment_serves, _maintainer_tenant)
    return run_tool(BINDING, event)
