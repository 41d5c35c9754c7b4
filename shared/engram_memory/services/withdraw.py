"""engram_memory_withdraw: pending → withdrawn, shredding the key and ciphertext at once.

Always confirmation-gated. The wrapped data key and every ciphertext chunk are deleted in
the same transaction as the state change, so ``key_destruction`` is ``complete`` the moment
the call succeeds. A withdrawn candidate can never be admitted (admission needs pending).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.contract.outputs import WithdrawReceipt, WithdrawValue, dump_value
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain.context import InvocationContext, Tool
from engram_memory.domain.errors import NotFound
from engram_memory.domain.intent import intent_digest, operation_digest
from engram_memory.domain.journal import JournalHead
from engram_memory.domain.lifecycle import Operation, State, transition
from engram_memory.services.mutation import (
    Sleep,
    commit_fenced,
    gate_refusal_explained,
    replayed,
    state_behind_gate,
    with_rereads,
)
from engram_memory.services.ports import (
    CandidateEntry,
    Clock,
    ConfirmationGate,
    MemoryStore,
    MoveCandidate,
    MutationPlan,
    ReadRequest,
)
from engram_memory.services.transitions import Transition

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel

# The candidate item says "accepted" once admitted; for the lifecycle that is a record.
_CANDIDATE_LIFECYCLE = {"accepted": State.ACCEPTED_CURRENT}


class WithdrawService:
    """The withdraw use case."""

    def __init__(self, *, store: MemoryStore, gate: ConfirmationGate, clock: Clock,
                 sleep: Sleep) -> None:
        self._store = store
        self._gate = gate
        self._clock = clock
        self._sleep = sleep

    def execute(self, ctx: InvocationContext, model: BaseModel) -> dict[str, Any]:
        """Withdraw a pending candidate; the tool's ``value``."""
        args = canonical_arguments(model)
        intent = intent_digest(Tool.WITHDRAW, args)

        def attempt() -> dict[str, Any]:
            # One round trip: the replay, the target and the head do not depend on each other.
            found = self._store.read_together(ctx.scope, ReadRequest(
                idempotency=(ctx.principal, args["idempotency_key"]),
                candidate_id=args["candidate_id"], head=True))
            prior = replayed(found.idempotency, Tool.WITHDRAW.value, intent)
            if prior is not None:
                return dump_value(WithdrawValue.model_validate({**prior, "replayed": True}))
            now_ms = self._clock.now_ms()
            with state_behind_gate(self._gate, ctx, Tool.WITHDRAW, args, now_ms):
                candidate = found.candidate
                if candidate is None:
                    raise NotFound
                state = _CANDIDATE_LIFECYCLE.get(candidate.state) or State(candidate.state)
                to_state = transition(state, Operation.WITHDRAW)
            gate_item = self._gate.consume_item(ctx, Tool.WITHDRAW, args["candidate_id"],
                                                operation_digest(Tool.WITHDRAW, args), now_ms)
            move = Transition(ctx=ctx, tool=Tool.WITHDRAW, arguments=args,
                              operation="withdraw", from_state=state.value,
                              to_state=to_state.value, now_ms=now_ms,
                              digests={"intent_digest": intent})
            with gate_refusal_explained(self._gate, ctx, Tool.WITHDRAW, args, now_ms):
                return commit_fenced(
                    self._store, ctx.scope,
                    lambda head: _plan(move, candidate, intent, gate_item, head), self._sleep,
                    found.head)

        return with_rereads(attempt, self._sleep)


def _plan(move: Transition, candidate: CandidateEntry, intent: str,
          gate_item: Mapping[str, Any], head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
    event = move.event(head, {"candidate_id": candidate.candidate_id})
    value = dump_value(WithdrawValue(
        receipt=WithdrawReceipt(**move.receipt(event)),
        replayed=False,
        key_destruction="complete",
    ))
    change = MoveCandidate(candidate_id=candidate.candidate_id, from_state=move.from_state,
                           to_state=move.to_state, shred=True,
                           blob_chunks=candidate.blob_chunks)
    plan = MutationPlan(scope=move.ctx.scope, principal=move.ctx.principal,
                        idempotency_key=move.arguments["idempotency_key"],
                        tool=Tool.WITHDRAW.value, intent_digest=intent, result=value,
                        head=head, event=event, changes=(change,), gate_item=gate_item,
                        at_ms=move.now_ms)
    return plan, value
