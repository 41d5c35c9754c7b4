"""engram_memory_forget: an admitted record → tombstoned, for good.

Always confirmation-gated. In one transaction: the record item becomes ``tombstoned`` and
loses its content (``record_json`` and any parts), the tombstone guard item keeps the
effective payload digest (so a re-capture of the same content is held for adjudication),
and the journal records the move. Reads check canonical state, so the record leaves every
read path at commit; the search postings are removed by the projector afterwards, which
flips ``projection_invalidation`` on the record item: the call reports ``pending``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.contract.outputs import ForgetReceipt, ForgetValue, dump_value
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
    Clock,
    ConfirmationGate,
    MemoryStore,
    MutationPlan,
    ReadRequest,
    RecordEntry,
    TombstoneRecord,
)
from engram_memory.services.transitions import Transition

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel


class ForgetService:
    """The forget use case."""

    def __init__(self, *, store: MemoryStore, gate: ConfirmationGate, clock: Clock,
                 sleep: Sleep) -> None:
        self._store = store
        self._gate = gate
        self._clock = clock
        self._sleep = sleep

    def execute(self, ctx: InvocationContext, model: BaseModel) -> dict[str, Any]:
        """Forget an admitted record; the tool's ``value``."""
        args = canonical_arguments(model)
        intent = intent_digest(Tool.FORGET, args)

        def attempt() -> dict[str, Any]:
            # One round trip: the replay, the target and the head do not depend on each other.
            found = self._store.read_together(ctx.scope, ReadRequest(
                idempotency=(ctx.principal, args["idempotency_key"]),
                record_id=args["record_id"], head=True))
            prior = replayed(found.idempotency, Tool.FORGET.value, intent)
            if prior is not None:
                return dump_value(ForgetValue.model_validate({**prior, "replayed": True}))
            now_ms = self._clock.now_ms()
            with state_behind_gate(self._gate, ctx, Tool.FORGET, args, now_ms):
                record = found.record
                if record is None:
                    raise NotFound
                to_state = transition(State(record.state), Operation.TOMBSTONE)
            gate_item = self._gate.consume_item(ctx, Tool.FORGET, args["record_id"],
                                                operation_digest(Tool.FORGET, args), now_ms)
            move = Transition(ctx=ctx, tool=Tool.FORGET, arguments=args,
                              operation=Operation.TOMBSTONE.value, from_state=record.state,
                              to_state=to_state.value, now_ms=now_ms,
                              digests={"intent_digest": intent,
                                       "record_digest": record.record_digest,
                                       "payload_digest": record.payload_digest})
            with gate_refusal_explained(self._gate, ctx, Tool.FORGET, args, now_ms):
                return commit_fenced(
                    self._store, ctx.scope,
                    lambda head: _plan(move, record, intent, gate_item, head), self._sleep,
                    found.head)

        return with_rereads(attempt, self._sleep)


def _plan(move: Transition, record: RecordEntry, intent: str,
          gate_item: Mapping[str, Any], head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
    event = move.event(head, {"record_id": record.record_id})
    value = dump_value(ForgetValue(
        receipt=ForgetReceipt(**move.receipt(event)),
        replayed=False,
        projection_invalidation="pending",
    ))
    change = TombstoneRecord(record_id=record.record_id, from_state=record.state,
                             payload_digest=record.payload_digest, parts=record.parts,
                             cursor=event.cursor, at_ms=move.now_ms)
    plan = MutationPlan(scope=move.ctx.scope, principal=move.ctx.principal,
                        idempotency_key=move.arguments["idempotency_key"],
                        tool=Tool.FORGET.value, intent_digest=intent, result=value,
                        head=head, event=event, changes=(change,), gate_item=gate_item,
                        at_ms=move.now_ms)
    return plan, value
