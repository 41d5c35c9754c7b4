"""What one admission decision commits: the journal event, the candidate's move (and
shred), the accepted record, and the tool value — built on a journal head, so a moved head
only rebuilds this (services/pipeline.py, ``commit_fenced``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engram_memory.contract.outputs import AdmissionOutcome, AdmissionValue, dump_value
from engram_memory.domain import receipts, records
from engram_memory.domain.canonical import format_cursor
from engram_memory.domain.journal import JournalHead, build_event
from engram_memory.domain.lifecycle import Operation, State, candidate_state, transition
from engram_memory.services.pipeline import Built, MutationCall
from engram_memory.services.ports.write import (
    CandidateEntry,
    Change,
    MoveCandidate,
    PutRecord,
)


@dataclass(frozen=True, slots=True)
class DecidedAdmission:
    """A decided admission: status, decision receipt, and the record when accepted."""

    status: str
    receipt: Mapping[str, Any]
    record: records.Record | None = None
    record_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    trust_binding: Mapping[str, Any] = field(default_factory=dict)


ADMISSION_OPERATIONS: Mapping[str, Operation] = MappingProxyType({
    "accepted": Operation.ACCEPT,
    "duplicate_exact": Operation.ACCEPT,
    "rejected": Operation.REJECT,
    "pending_adjudication": Operation.HOLD,
})
"""Admission status → the lifecycle move of the candidate (lifecycle.TRANSITIONS)."""


class ReceiptFactory:
    """Builds decision receipts for one candidate under one policy id/version."""

    def __init__(self, candidate: CandidateEntry, policy_id: str, version: str) -> None:
        self._candidate = candidate
        self._policy_id = policy_id
        self._version = version

    def __call__(self, status: str, trust: str | None,
                 record_id: str | None) -> dict[str, Any]:
        return receipts.decision_receipt(
            candidate_id=self._candidate.candidate_id,
            status=status,
            policy_id=self._policy_id,
            policy_version=self._version,
            bound_policy_version=self._candidate.policy_version,
            trust_class=trust,
            record_id=record_id,
        )


def plan_admission(call: MutationCall, candidate: CandidateEntry, outcome: DecidedAdmission,
                   now_ms: int, head: JournalHead) -> Built:
    """The one commit of a decided admission on ``head``, and the tool value it returns."""
    to_state = transition(State.PENDING, ADMISSION_OPERATIONS[outcome.status])
    decision_digest = receipts.decision_receipt_digest(outcome.receipt)
    subject = {"candidate_id": candidate.candidate_id}
    if outcome.record_id is not None:
        subject["record_id"] = outcome.record_id
    event = build_event(
        head, scope=call.scope, operation=ADMISSION_OPERATIONS[outcome.status].value,
        subject=subject, from_state=State.PENDING.value, to_state=to_state.value,
        actor=call.actor, at_ms=now_ms,
        digests={"decision_receipt_digest": decision_digest,
                 "record_digest": candidate.record_digest, "intent_digest": call.idem.intent},
    )
    fields: dict[str, Any] = {"status": outcome.status, "candidate_id": candidate.candidate_id,
                              "cursor": format_cursor(event.cursor),
                              "decision_receipt_digest": decision_digest}
    if outcome.record_id is not None:
        fields["record_id"] = outcome.record_id
    fields["transaction_receipt_digest"] = receipts.outcome_transaction_digest(fields)
    value = dump_value(AdmissionValue(outcome=AdmissionOutcome(**fields), replayed=False))
    # Every decided move out of pending shreds the key and ciphertext; a hold keeps them.
    changes: list[Change] = [MoveCandidate(
        candidate_id=candidate.candidate_id, from_state=State.PENDING.value,
        to_state=candidate_state(to_state), shred=to_state is not State.PENDING,
        blob_chunks=candidate.blob_chunks, decision_receipt=outcome.receipt,
        record_id=outcome.record_id,
    )]
    if outcome.record is not None:
        valid_time = outcome.payload["valid_time"]
        changes.append(PutRecord(
            record=outcome.record, payload_digest=candidate.payload_digest,
            valid_t=int(valid_time["t"]), valid_t_end=valid_time.get("t_end"),
            expires_at_ms=records.expires_at_ms(outcome.payload), cursor=event.cursor,
            trust_binding=outcome.trust_binding,
            derivative_rule=records.derivative_rule(outcome.payload),
        ))
    return Built(event, tuple(changes), value)
