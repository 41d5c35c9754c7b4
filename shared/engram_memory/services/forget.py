"""engram_memory_forget: an admitted record → tombstoned, for good.

Always confirmation-gated. In one transaction: the record item becomes ``tombstoned`` and
loses its content (``record_json`` and any parts), the tombstone guard item keeps the
effective payload digest (so a re-capture of the same content is held for adjudication),
the journal records the move, and the forget ledger keeps an entry a point-in-time
restore of the main table cannot roll back (services/forget_ledger.py,
docs/forget-ledger.md). Reads check canonical state, so the record leaves every read path
at commit; the search postings are removed by the projector afterwards, which
flips ``projection_invalidation`` on the record item: the call reports ``pending``.
The steps every mutation shares are services/pipeline.py; the move, services/transitions.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.contract.inputs import ForgetArgs
from engram_memory.contract.outputs import ForgetReceipt, ForgetValue, dump_value
from engram_memory.domain.context import Tool
from engram_memory.domain.lifecycle import Operation, State
from engram_memory.services.forget_ledger import ledgered
from engram_memory.services.ports import ReadRequest, ReadResult, RecordEntry, TombstoneRecord
from engram_memory.services.transitions import Target, TargetMove, TargetMoveService

if TYPE_CHECKING:
    from engram_memory.domain.journal import JournalEvent
    from engram_memory.services.pipeline import Build
    from engram_memory.services.transitions import Transition


class Forget(TargetMove):
    """The record becomes tombstoned and loses its content; the guard keeps its digest."""

    operation = Operation.TOMBSTONE
    subject_key = "record_id"
    value_model = ForgetValue
    _record: RecordEntry

    def reads(self) -> ReadRequest:
        return ReadRequest(record_id=self.target_id)

    def target(self, found: ReadResult) -> Target | None:
        if found.record is None:
            return None
        self._record = record = found.record
        digests = {"record_digest": record.record_digest,
                   "payload_digest": record.payload_digest}
        return Target(self.target_id, State(record.state), digests)

    def decide(self, checked: Transition, found: ReadResult, now_ms: int) -> Build:
        """The move's commit, with its entry in the forget ledger (docs/forget-ledger.md)."""
        return ledgered(super().decide(checked, found, now_ms))

    def commit(self, move: Transition, event: JournalEvent) -> tuple[TombstoneRecord,
                                                                  dict[str, Any]]:
        tombstone = TombstoneRecord(
            record_id=self.target_id, from_state=move.target.state.value,
            payload_digest=self._record.payload_digest, parts=self._record.parts,
            cursor=event.cursor, at_ms=move.now_ms)
        value = ForgetValue(receipt=ForgetReceipt(**move.receipt(event)), replayed=False,
                            projection_invalidation="pending")
        return tombstone, dump_value(value)


class ForgetService(TargetMoveService[ForgetArgs]):
    """The forget use case."""

    tool = Tool.FORGET
    move = Forget
