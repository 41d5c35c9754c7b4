"""The ConfirmationGate port over in-memory confirmations (same verdicts as DynamoDB's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory.domain.confirmation import Verdict, explain, verdict_on

if TYPE_CHECKING:
    from engram_memory.adapters.memory.tables import MemoryTables
    from engram_memory.domain.context import InvocationContext, Tool


class MemoryConfirmationGate:
    """Reads a confirmation to explain a refusal; the store's commit consumes it."""

    def __init__(self, tables: MemoryTables) -> None:
        self._tables = tables

    def explain_refusal(self, ctx: InvocationContext, tool: Tool, target: str,
                        operation_digest: str, now_ms: int) -> None:
        """DigestConflict when a usable approval of this call names other arguments."""
        explain(self._verdict(ctx, tool, target, operation_digest, now_ms),
                refused_by_commit=True)

    def _verdict(self, ctx: InvocationContext, tool: Tool, target: str,
                 operation_digest: str, now_ms: int) -> Verdict:
        if ctx.confirmation_ref is None:
            return Verdict.NONE
        found = self._tables.confirmations.get((ctx.scope, ctx.confirmation_ref))
        return verdict_on(found, ctx.principal, tool.value, target, operation_digest, now_ms)
