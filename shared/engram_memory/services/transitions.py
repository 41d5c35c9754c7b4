"""What withdraw and forget share: a gated, journaled state transition with a receipt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engram_memory.domain import receipts
from engram_memory.domain.canonical import format_cursor
from engram_memory.domain.context import InvocationContext, Tool
from engram_memory.domain.intent import operation_digest, target_of
from engram_memory.domain.journal import JournalEvent, JournalHead, build_event
from engram_memory.services.mutation import actor_of


@dataclass(frozen=True, slots=True)
class Transition:
    """One journaled move of a target, authorized by a consumed confirmation."""

    ctx: InvocationContext
    tool: Tool
    arguments: Mapping[str, Any]
    operation: str
    from_state: str
    to_state: str
    now_ms: int
    digests: Mapping[str, str]

    @property
    def target(self) -> str:
        """The candidate or record id the tool acts on."""
        return target_of(self.tool, self.arguments)

    def authorization_digest(self) -> str:
        """Digest of what authorized the move (identities, capability, confirmation)."""
        return receipts.authorization_receipt_digest(receipts.authorization_receipt(
            tool=self.tool.value,
            target=self.target,
            principal=self.ctx.principal,
            agent_id=self.ctx.agent_id,
            session_id=self.ctx.session_id,
            operation_digest=operation_digest(self.tool, self.arguments),
            confirmation_ref=self.ctx.confirmation_ref,
        ))

    def event(self, head: JournalHead, subject: Mapping[str, str]) -> JournalEvent:
        """The journal event of this move on ``head``."""
        return build_event(
            head,
            scope=self.ctx.scope,
            operation=self.operation,
            subject=subject,
            from_state=self.from_state,
            to_state=self.to_state,
            actor=actor_of(self.ctx),
            at_ms=self.now_ms,
            digests={**self.digests, "authorization_receipt_digest":
                     self.authorization_digest()},
        )

    def receipt(self, event: JournalEvent) -> dict[str, Any]:
        """The contract receipt of the committed event (digest recomputable from it)."""
        receipt: dict[str, Any] = {
            "event_id": event.event_id,
            "operation": self.operation,
            "from_state": self.from_state,
            "to_state": self.to_state,
            "cursor": format_cursor(event.cursor),
            "event_digest": event.event_digest,
            "authorization_receipt_digest": event.body["digests"][
                "authorization_receipt_digest"],
        }
        receipt["transaction_receipt_digest"] = receipts.transition_transaction_digest(receipt)
        return receipt
