"""Host adjudication as an invocation of the request_admission Lambda.

Accepting a held candidate decrypts it, and only request_admission may use the tenant
key (kms:Decrypt). So the host API never adjudicates in its own process: it sends one
closed ``AdjudicationInvocation`` through the invoker port (``lambda:Invoke`` in AWS, a
direct handler call in local mode and tests) and turns the envelope back into the value
or the contract error it names. The event carries the maintainer's bearer token, which
the function verifies again (its IAM invoker may be the agent-facing endpoint).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from engram_memory.contract.invocation import ADJUDICATION_KIND, AdjudicationInvocation
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import (
    CATALOG,
    EngramError,
    InvalidSchema,
    MutationOutcomeUnknown,
)
from engram_memory.mcp.dispatch import ToolInvoker

logger = logging.getLogger(__name__)


def adjudication_event(scope: Scope, candidate_id: str, decision: str, approver: str,
                       audit_id: str, maintainer_token: str) -> dict[str, Any]:
    """The JSON-ready event; a value the closed model refuses is INVALID_SCHEMA."""
    try:
        event = AdjudicationInvocation.model_validate({
            "kind": ADJUDICATION_KIND, "tenant_id": scope.tenant_id,
            "workspace_id": scope.workspace_id, "candidate_id": candidate_id,
            "decision": decision, "approver": approver, "audit_id": audit_id,
            "maintainer_token": maintainer_token,
        })
    except ValidationError:
        raise InvalidSchema from None
    return event.model_dump(mode="json")


def _error_of(envelope: Mapping[str, Any]) -> EngramError:
    error = envelope.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    known = CATALOG.get(code) if isinstance(code, str) else None
    # An error this side cannot name: the decision may or may not have been recorded.
    return known() if known is not None else MutationOutcomeUnknown()


def value_of(envelope: object) -> dict[str, Any]:
    """The success value of an envelope; its contract error raised otherwise."""
    if not isinstance(envelope, Mapping) or not isinstance(envelope.get("ok"), bool):
        raise MutationOutcomeUnknown
    if not envelope["ok"]:
        raise _error_of(envelope)
    output = envelope.get("output")
    value = output.get("value") if isinstance(output, Mapping) else None
    if not isinstance(value, dict):
        raise MutationOutcomeUnknown
    return value


class InvokedAdjudicator:
    """The host API's ``Adjudicate`` port: one request_admission invocation per decision."""

    def __init__(self, invoker: ToolInvoker, new_audit_id: Callable[[], str]) -> None:
        """Bind the invoker (lambda:Invoke or in-process) and the audit id source."""
        self._invoker = invoker
        self._new_audit_id = new_audit_id

    def __call__(self, scope: Scope, candidate_id: str, decision: str, approver: str,
                 maintainer_token: str) -> dict[str, Any]:
        """Ask request_admission to settle the candidate; the admission value."""
        audit_id = self._new_audit_id()
        event = adjudication_event(scope, candidate_id, decision, approver, audit_id,
                                   maintainer_token)
        envelope = self._invoker.invoke(Tool.REQUEST_ADMISSION, event)
        try:
            return value_of(envelope)
        except EngramError as exc:
            logger.info("adjudication refused", extra={"error_code": exc.code,
                                                       "audit_id": audit_id})
            raise
