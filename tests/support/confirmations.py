"""An approved confirmation item exactly as the confirmation workflow leaves it.

Tests that are not about the gate (and the benches, bench/harness.py) record the human
approval directly instead of running the Step Functions workflow. The item carries every
attribute the production gate adapter reads (the request record, then the decision and
the open window), so gated tools run their real path: the commit consumes it, and a
refusal is explained from it.
"""

from __future__ import annotations

from typing import Any

from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.intent import operation_digest

WINDOW_MS = 30_000


def approved_item(scope: Scope, ref: str, tool: Tool, args: dict[str, Any], *,
                  principal: str, now_ms: int) -> dict[str, Any]:
    """The main-table item of an approval of exactly this call, open at ``now_ms``."""
    target = str(args.get("candidate_id") or args.get("record_id"))
    return {
        "pk": {"S": f"CONF#{scope.tenant_id}#{scope.workspace_id}"}, "sk": {"S": f"REF#{ref}"},
        "elicitation_ref": {"S": ref}, "state": {"S": "approved"}, "tool": {"S": tool.value},
        "target": {"S": target}, "operation_digest": {"S": operation_digest(tool, args)},
        "principal": {"S": principal}, "requested_by": {"S": "host:tests"},
        "created_at_ms": {"N": str(now_ms - 2000)},
        "expires_at_ms": {"N": str(now_ms + 600_000)},
        "window_seconds": {"N": str(WINDOW_MS // 1000)}, "decision": {"S": "approve"},
        "approver": {"S": "host:reviewer"}, "approved_at_ms": {"N": str(now_ms - 1000)},
        "window_ends_at_ms": {"N": str(now_ms + WINDOW_MS)},
    }
