"""What one admission decision commits: the journal event, the candidate's move (and
shred), the accepted record, and the tool value — built on a journal head, so a moved head
only rebuilds this (services/mutation.py, ``commit_fenced``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engram_memory.contract.outputs import AdmissionOutcome, AdmissionValue, dump_value
from engram_memory.domain import receipts, records
from engram_memory.domain.canonical import format_cursor
from engram_memory.domain.context import Scope
from engram_memory.domain.journal import Actor, JournalHead, build_event
from engram_memory.domain.lifecycle import State
from engram_memory.services.ports import (
    CandidateEntry,
    Change,
    MoveCandidate,
    MutationPlan,
    PutRecord,
)

ACCEPTED_CANDIDATE_STATE = "accepted"


@dataclass(frozen=True, slots=True)
class Idem:
    """The idempotency reservation a commit makes: who, which key, which tool and intent."""

    principal: str
    key: str
    tool: str
    intent: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """A decided admission: status, decision receipt, and the record when accepted."""

    status: str
    receipt: Mapping[str, Any]
    record: records.Record | None = None
    record_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    trust_binding: Mapping[str, Any] = field(default_factory=dict)


_TRANSITION = {
    "accepted": (State.ACCEPTED_CURRENT.value, "accept", ACCEPTED_CANDIDATE_STATE, True),
    "duplicate_exact": (State.ACCEPTED_CURRENT.value, "accept", ACCEPTED_CANDIDATE_STATE, True),
    "rejected": (State.REJECTED.value, "reject", State.REJECTED.value, True),
    "pending_adjudication": (State.PENDING.value, "hold", State.PENDING.value, False),
}
"""status → (journal to_state, journal operation, candidate state, shred key+ciphertext)."""


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


def plan_admission(scope: Scope, actor: Actor, idem: Idem, candidate: CandidateEntry,
                   outcome: Outcome, now_ms: int, gate_item: Mapping[str, Any] | None,
                   head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
    """The one commit of a decided admission on ``head``, and the tool value it returns."""
    to_state, operation, candidate_state, shred = _TRANSITION[outcome.status]
    decision_digest = receipts.decision_receipt_digest(outcome.receipt)
    subject = {"candidate_id": candidate.candidate_id}
    if outcome.record_id is not None:
        subject["record_id"] = outcome.record_id
    event = build_event(
        head, scope=scope, operation=operation, subject=subject,
        from_state=State.PENDING.value, to_state=to_state, actor=actor, at_ms=now_ms,
        digests={"decision_receipt_digest": decision_digest,
                 "record_digest": candidate.record_digest, "intent_digest": idem.intent},
    )
    fields: dict[str, Any] = {"status": outcome.status, "candidate_id": candidate.candidate_id,
                              "cursor": format_cursor(event.cursor),
                              "decision_receipt_digest": decision_digest}
    if outcome.record_id is not None:
        fields["record_id"] = outcome.record_id
    fields["transaction_receipt_digest"] = receipts.outcome_transaction_digest(fields)
    value = dump_value(AdmissionValue(outcome=AdmissionOutcome(**fields), replayed=False))
    changes: list[Change] = [MoveCandidate(
        candidate_id=candidate.candidate_id, from_state=State.PENDING.value,
        to_state=candidate_state, shred=shred, blob_chunks=candidate.blob_chunks,
        decision_receipt=outcome.receipt, record_id=outcome.record_id,
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
    plan = MutationPlan(scope=scope, principal=idem.principal, idempotency_key=idem.key,
                        tool=idem.tool, intent_digest=idem.intent, result=value, head=head,
                        event=event, changes=tuple(changes), gate_item=gate_item, at_ms=now_ms)
    return plan, value
