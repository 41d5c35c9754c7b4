"""engram_memory_withdraw: pending → withdrawn, shredding the key and ciphertext at once.

Always confirmation-gated. The wrapped data key and every ciphertext chunk are deleted in
the same transaction as the state change, so ``key_destruction`` is ``complete`` the moment
the call succeeds; the same commit puts the withdrawal's forget-ledger entry
(services/forget_ledger.py, docs/forget-ledger.md). A withdrawn candidate can never be
admitted (admission needs pending).
The steps every mutation shares are services/pipeline.py; the move, services/transitions.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.contract.inputs import WithdrawArgs
from engram_memory.contract.outputs import WithdrawReceipt, WithdrawValue, dump_value
from engram_memory.domain.context import Tool
from engram_memory.domain.lifecycle import Operation, state_of_candidate
from engram_memory.services.forget_ledger import ledgered
from engram_memory.services.ports import MoveCandidate, ReadRequest, ReadResult
from engram_memory.services.transitions import Target, TargetMove, TargetMoveService

if TYPE_CHECKING:
    from engram_memory.domain.journal import JournalEvent
    from engram_memory.services.pipeline import Build
    from engram_memory.services.transitions import Transition


class Withdraw(TargetMove):
    """The candidate moves pending → withdrawn; its key and ciphertext go with it."""

    operation = Operation.WITHDRAW
    subject_key = "candidate_id"
    value_model = WithdrawValue
    _chunks = 0

    def reads(self) -> ReadRequest:
        return ReadRequest(candidate_id=self.target_id)

    def target(self, found: ReadResult) -> Target | None:
        if found.candidate is None:
            return None
        self._chunks = found.candidate.blob_chunks
        return Target(self.target_id, state_of_candidate(found.candidate.state), {})

    def decide(self, checked: Transition, found: ReadResult, now_ms: int) -> Build:
        """The move's commit, with its entry in the forget ledger (docs/forget-ledger.md)."""
        return ledgered(super().decide(checked, found, now_ms))

    def commit(self, move: Transition, event: JournalEvent) -> tuple[MoveCandidate,
                                                                  dict[str, Any]]:
        shred = MoveCandidate(candidate_id=self.target_id, from_state=move.target.state.value,
                              to_state=move.to_state.value, shred=True,
                              blob_chunks=self._chunks)
        return shred, dump_value(WithdrawValue(
            receipt=WithdrawReceipt(**move.receipt(event)), replayed=False,
            key_destruction="complete"))


class WithdrawService(TargetMoveService[WithdrawArgs]):
    """The withdraw use case."""

    tool = Tool.WITHDRAW
    move = Withdraw
