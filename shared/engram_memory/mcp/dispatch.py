"""Dispatch of one verified tool call to its tool Lambda through the invoker port.

The same typed internal event (``ToolInvocation``: verified context + raw arguments)
travels whether the invoker is ``lambda:Invoke`` (AWS) or a direct in-process call (local
mode, tests). The endpoint never validates arguments itself: the tool Lambda owns the
closed schema. What the endpoint guarantees is the deadline, the auditId and that any
failure becomes a sanitized envelope.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from engram_memory.contract.envelope import failure, failure_for_unexpected
from engram_memory.contract.invocation import ContextModel, ToolInvocation
from engram_memory.domain.context import MUTATING_TOOLS, InvocationContext, Tool
from engram_memory.domain.errors import DeadlineExceeded, EngramError

logger = logging.getLogger(__name__)

ClockMs = Callable[[], int]
"""The clock port in epoch milliseconds."""


class ToolInvoker(Protocol):
    """The one way the endpoint reaches a tool: ``invoke(tool, event) -> envelope``."""

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Run the tool Lambda on the internal event; raise EngramError on transport failure."""
        ...


def purpose_of(tool: Tool, arguments: Mapping[str, Any]) -> object | None:
    """The purpose_ref an argument object claims (search/get top level, capture payload)."""
    if tool in (Tool.SEARCH, Tool.GET):
        return arguments.get("purpose_ref")
    if tool is Tool.CAPTURE:
        payload = arguments.get("payload")
        return payload.get("purpose_ref") if isinstance(payload, Mapping) else None
    return None


def purpose_mismatch(tool: Tool, arguments: Mapping[str, Any], context: InvocationContext) -> bool:
    """True when the arguments claim, as a string, a purpose other than the host-bound one.

    An absent purpose or one of the wrong JSON type is not a mismatch but malformed
    arguments: the closed schema reports it as INVALID_SCHEMA (fix the arguments).
    """
    claimed = purpose_of(tool, arguments)
    return isinstance(claimed, str) and claimed != context.purpose_ref


def missing_confirmation(tool: Tool, context: InvocationContext) -> bool:
    """True when ``tool`` is gated for this context but the host bound no confirmation.

    CONTRACT §0 lists "missing confirmation reference" among the -32603 causes: the host
    failed to bind what it must. A reference that is present but invalid, expired, used
    or mismatched is the gate's answer (gate_failed), given by the tool.
    """
    return context.requires_confirmation(tool) and context.confirmation_ref is None


def protocol_refusal(tool: Tool, arguments: Mapping[str, Any], context: InvocationContext
                     ) -> bool:
    """True when the call must be refused with -32603 before any tool runs."""
    return purpose_mismatch(tool, arguments, context) or missing_confirmation(tool, context)


def build_invocation(
    tool: Tool, context: InvocationContext, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON-ready internal event for a tool Lambda."""
    event = ToolInvocation(
        tool=tool, context=ContextModel.from_context(context), arguments=dict(arguments)
    )
    return event.model_dump(mode="json")


def _well_formed(envelope: object) -> bool:
    return isinstance(envelope, dict) and isinstance(envelope.get("ok"), bool) and (
        isinstance(envelope.get("output"), dict) if envelope["ok"]
        else isinstance(envelope.get("error"), dict)
    )


def _unexpected(tool: Tool, audit_id: str) -> dict[str, Any]:
    # The call may have reached the tool, so a mutation may have committed (the same rule
    # as inside the tool Lambda: contract.envelope.failure_for_unexpected).
    return failure_for_unexpected(audit_id, mutation=tool in MUTATING_TOOLS)


def dispatch(
    tool: Tool,
    context: InvocationContext,
    arguments: Mapping[str, Any],
    invoker: ToolInvoker,
    clock_ms: ClockMs,
) -> dict[str, Any]:
    """Invoke the tool for a verified context and return the envelope (never raises)."""
    audit_id = context.audit_id
    if clock_ms() >= context.deadline_ms:
        return failure(DeadlineExceeded, audit_id)
    try:
        envelope = invoker.invoke(tool, build_invocation(tool, context, arguments))
    except EngramError as exc:
        return failure(exc, audit_id)
    except Exception:
        # The detail stays out of the response and the log line (it may carry content).
        logger.error("tool invocation failed", extra={"tool": tool.value, "audit_id": audit_id})
        return _unexpected(tool, audit_id)
    if not _well_formed(envelope):
        logger.error("tool returned a malformed envelope", extra={"tool": tool.value,
                                                                   "audit_id": audit_id})
        return _unexpected(tool, audit_id)
    # The host's audit id is authoritative in every envelope, whatever the tool echoed.
    return {**envelope, "auditId": audit_id}
