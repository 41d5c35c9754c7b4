"""The confirmation gate used until a real one is wired: it refuses every gated call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.domain.errors import GateFailed

if TYPE_CHECKING:
    from engram_memory.domain.context import InvocationContext, Tool


class RefusingGate:
    """Fail closed: a gated tool never executes without a gate that can approve it."""

    def consume_item(
        self,
        ctx: InvocationContext,
        tool: Tool,
        target: str,
        operation_digest: str,
        now_ms: int,
    ) -> dict[str, Any]:
        """Always GateFailed."""
        raise GateFailed

    def explain_refusal(
        self,
        ctx: InvocationContext,
        tool: Tool,
        target: str,
        operation_digest: str,
        now_ms: int,
    ) -> None:
        """Nothing to explain: nothing was ever approved."""

    def require_approval(
        self,
        ctx: InvocationContext,
        tool: Tool,
        target: str,
        operation_digest: str,
        now_ms: int,
    ) -> None:
        """Always GateFailed: nothing is ever approved."""
        raise GateFailed
