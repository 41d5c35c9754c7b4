"""Build the internal tool-Lambda event the MCP endpoint sends (``ToolInvocation``)."""

from __future__ import annotations

from typing import Any

from engram_memory.domain.context import Tool

TENANT_ID = "tenant-a"
WORKSPACE_ID = "ws-main"
PRINCIPAL = "user:alice"
AGENT_ID = "agent:writer"
SESSION_ID = "session-0001"
DEFAULT_PURPOSE_REF = "purpose:engineering-notes"
# Far in the future so a test never trips DEADLINE_EXCEEDED unless it sets one.
FAR_DEADLINE_MS = 4_102_444_800_000  # 2100-01-01T00:00:00.000Z
ALL_TOOLS = tuple(sorted(t.value for t in Tool))


def make_context(**overrides: Any) -> dict[str, Any]:
    """A wire-form host context (``ContextModel``) with test defaults; keys override."""
    context: dict[str, Any] = {
        "tenant_id": TENANT_ID,
        "workspace_id": WORKSPACE_ID,
        "principal": PRINCIPAL,
        "agent_id": AGENT_ID,
        "session_id": SESSION_ID,
        "purpose_ref": DEFAULT_PURPOSE_REF,
        "audit_id": "audit-0001",
        "deadline_ms": FAR_DEADLINE_MS,
        "capabilities": list(ALL_TOOLS),
        "confirmation_required": [],
        "token_id": "jti-0001",
    }
    context.update(overrides)
    return context


def make_event(tool: Tool | str, args: Any, **ctx_overrides: Any) -> dict[str, Any]:
    """``{tool, context, arguments}`` for ``tool``; ``ctx_overrides`` replace context fields.

    For capture, the context's purpose_ref defaults to the payload's own purpose_ref (the
    endpoint refuses a mismatch before the Lambda), unless the test overrides it.
    """
    name = tool.value if isinstance(tool, Tool) else tool
    if (
        name == Tool.CAPTURE.value
        and "purpose_ref" not in ctx_overrides
        and isinstance(args, dict)
        and isinstance(args.get("payload"), dict)
        and isinstance(args["payload"].get("purpose_ref"), str)
    ):
        ctx_overrides["purpose_ref"] = args["payload"]["purpose_ref"]
    return {"tool": name, "context": make_context(**ctx_overrides), "arguments": args}
