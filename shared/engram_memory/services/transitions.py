"""What withdraw and forget share: a gated, journaled move of one target with a receipt.

A :class:`TargetMove` is the :class:`~engram_memory.services.pipeline.Mutation` of such a
tool; the tool's module names the target it reads, the state change it commits and the
value it answers (services/withdraw.py, services/forget.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import receipts
from engram_memory.domain.canonical import format_cursor
from engram_memory.domain.errors import NotFound
from engram_memory.domain.intent import operation_digest
from engram_memory.domain.journal import JournalEvent, JournalHead, build_event
from engram_memory.domain.lifecycle import Operation, State, transition
from engram_memory.services.pipeline import (
    AgentCall,
    Build,
    Built,
    MutationCall,
    PipelineService,
)

if TYPE_CHECKING:
    from engram_memory.contract.outputs import OutputModel
    from engram_memory.domain.context import InvocationContext, Tool
    from engram_memory.services.ports.write import Change, ReadRequest, ReadResult

ArgsT = TypeVar("ArgsT", bound=BaseModel)
"""The tool's validated argument model."""


@dataclass(frozen=True, slots=True)
class Target:
    """The target as read: its id, lifecycle state and the digests its event carries."""

    target_id: str
    state: State
    digests: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Transition:
    """One journaled move of a target, authorized by a consumed confirmation."""

    call: MutationCall
    agent: AgentCall
    operation: Operation
    target: Target
    to_state: State
    now_ms: int

    def authorization_digest(self) -> str:
        """Digest of what authorized the move (identities, capability, confirmation)."""
        ctx = self.agent.ctx
        return receipts.authorization_receipt_digest(receipts.authorization_receipt(
            tool=self.agent.tool.value,
            target=self.agent.target,
            principal=ctx.principal,
            agent_id=ctx.agent_id,
            session_id=ctx.session_id,
            operation_digest=operation_digest(self.agent.tool, self.agent.arguments),
            confirmation_ref=ctx.confirmation_ref,
        ))

    def event(self, head: JournalHead, subject: Mapping[str, str]) -> JournalEvent:
        """The journal event of this move on ``head``."""
        return build_event(
            head,
            scope=self.call.scope,
            operation=self.operation.value,
            subject=subject,
            from_state=self.target.state.value,
            to_state=self.to_state.value,
            actor=self.call.actor,
            at_ms=self.now_ms,
            digests={"intent_digest": self.call.idem.intent, **self.target.digests,
                     "authorization_receipt_digest": self.authorization_digest()},
        )

    def receipt(self, event: JournalEvent) -> dict[str, Any]:
        """The contract receipt of the committed event (digest recomputable from it)."""
        receipt: dict[str, Any] = {
            "event_id": event.event_id,
            "operation": self.operation.value,
            "from_state": self.target.state.value,
            "to_state": self.to_state.value,
            "cursor": format_cursor(event.cursor),
            "event_digest": event.event_digest,
            "authorization_receipt_digest": event.body["digests"][
                "authorization_receipt_digest"],
        }
        receipt["transaction_receipt_digest"] = receipts.transition_transaction_digest(receipt)
        return receipt


class TargetMove(ABC):
    """The Mutation of a gated tool that moves one target: its refusals wait for the gate."""

    operation: ClassVar[Operation]
    subject_key: ClassVar[str]  # the argument naming the target, and the event's subject
    value_model: type[OutputModel]
    replay_fields: Mapping[str, Any] = {"replayed": True}
    state_behind_gate = True

    def __init__(self, call: MutationCall) -> None:
        if call.agent is None:
            raise TypeError("a target move is an agent's call")
        self._call, self._agent = call, call.agent
        self.target_id = self._agent.target

    @abstractmethod
    def reads(self) -> ReadRequest:
        """The target's item."""

    @abstractmethod
    def target(self, found: ReadResult) -> Target | None:
        """The target as read; None when absent."""

    @abstractmethod
    def commit(self, move: Transition, event: JournalEvent) -> tuple[Change, dict[str, Any]]:
        """The state change the commit makes, and the tool value."""

    def check(self, found: ReadResult, now_ms: int) -> Transition:
        """The move from the target's state (NotFound, AlreadyTerminal, IllegalTransition)."""
        target = self.target(found)
        if target is None:
            raise NotFound
        return Transition(self._call, self._agent, self.operation, target,
                          transition(target.state, self.operation), now_ms)

    def decide(self, checked: Transition, found: ReadResult, now_ms: int) -> Build:
        """Nothing more to decide: the move is the commit."""
        def build(head: JournalHead) -> Built:
            event = checked.event(head, {self.subject_key: self.target_id})
            change, value = self.commit(checked, event)
            return Built(event, (change,), value)
        return build


class TargetMoveService(PipelineService, Generic[ArgsT]):
    """A gated tool that moves one target: ``execute`` runs its :class:`TargetMove`."""

    tool: ClassVar[Tool]
    move: ClassVar[type[TargetMove]]

    def execute(self, ctx: InvocationContext, args: ArgsT) -> dict[str, Any]:
        """Run the move for the validated arguments; the tool's ``value``."""
        call = MutationCall.of_agent(ctx, self.tool, canonical_arguments(args))
        return self._pipeline.run(call, lambda: self.move(call))
