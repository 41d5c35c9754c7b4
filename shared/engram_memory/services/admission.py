"""engram_memory_request_admission and the host's adjudication of held candidates.

Order: idempotency replay → the candidate must be pending in this scope (else NOT_FOUND,
indistinguishable from unknown) → confirmation when the host requires it → policy version
check (POLICY_STALE) → decrypt once → policy → verifier → tombstone guard → ONE commit.
Outcomes: ``accepted`` (record stored, candidate key and ciphertext shredded),
``duplicate_exact`` (the record this candidate would produce already exists and is
accepted_current: its record_id is returned, the candidate is shredded; a record in another
state holds the candidate instead), ``rejected`` (shredded)
and ``pending_adjudication`` (left pending and sealed, for the host route).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram_memory.contract.outputs import AdmissionOutcome, AdmissionValue, dump_value
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import receipts, records
from engram_memory.domain.canonical import (
    DigestKind,
    canonical_json,
    digest,
    format_cursor,
    record_id_for,
)
from engram_memory.domain.context import InvocationContext, Scope, Tool
from engram_memory.domain.errors import (
    AlreadyTerminal,
    BlobMissing,
    IllegalTransition,
    InvalidSchema,
    NotFound,
)
from engram_memory.domain.intent import intent_digest
from engram_memory.domain.journal import Actor, JournalHead, build_event
from engram_memory.domain.lifecycle import State
from engram_memory.services.mutation import (
    Sleep,
    actor_of,
    commit_fenced,
    gate_element,
    gate_refusal_explained,
    stored_result,
    with_rereads,
)
from engram_memory.services.policy import check_not_stale
from engram_memory.services.ports import (
    AdmissionPolicy,
    AdmissionRequest,
    CandidateEntry,
    Change,
    Clock,
    ConfirmationGate,
    Decision,
    EvidenceVerifier,
    KeyVault,
    MemoryStore,
    MoveCandidate,
    MutationPlan,
    PutRecord,
    Sealer,
)

if TYPE_CHECKING:
    from pydantic import BaseModel


ACCEPTED_CANDIDATE_STATE = "accepted"
ADJUDICATION_TOOL = "adjudicate"
ADJUDICATION_PRINCIPAL = "host:adjudication"
ADJUDICATION_POLICY_ID = "host-adjudication"


@dataclass(frozen=True, slots=True)
class _Idem:
    principal: str
    key: str
    tool: str
    intent: str


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: str
    receipt: Mapping[str, Any]
    record: records.Record | None = None
    record_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    trust_binding: Mapping[str, Any] = field(default_factory=dict)


_TO_STATE = {
    "accepted": (State.ACCEPTED_CURRENT.value, "accept", ACCEPTED_CANDIDATE_STATE, True),
    "duplicate_exact": (State.ACCEPTED_CURRENT.value, "accept", ACCEPTED_CANDIDATE_STATE, True),
    "rejected": (State.REJECTED.value, "reject", State.REJECTED.value, True),
    "pending_adjudication": (State.PENDING.value, "hold", State.PENDING.value, False),
}
"""status → (journal to_state, journal operation, candidate state, shred key+ciphertext)."""


class AdmissionService:
    """The admission use case (agent tool) and the host's adjudication."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        key_vault: KeyVault,
        sealer: Sealer,
        policy: AdmissionPolicy,
        verifier: EvidenceVerifier,
        gate: ConfirmationGate,
        clock: Clock,
        sleep: Sleep,
    ) -> None:
        self._store = store
        self._key_vault = key_vault
        self._sealer = sealer
        self._policy = policy
        self._verifier = verifier
        self._gate = gate
        self._clock = clock
        self._sleep = sleep

    def execute(self, ctx: InvocationContext, model: BaseModel) -> dict[str, Any]:
        """Request admission of a pending candidate; the tool's ``value``."""
        args = canonical_arguments(model)
        idem = _Idem(ctx.principal, args["idempotency_key"], Tool.REQUEST_ADMISSION.value,
                     intent_digest(Tool.REQUEST_ADMISSION, args))

        def attempt() -> dict[str, Any]:
            prior = self._prior(ctx.scope, idem)
            if prior is not None:
                return prior
            candidate = self._pending(ctx.scope, args["candidate_id"])
            now_ms = self._clock.now_ms()
            gate_item = gate_element(self._gate, ctx, Tool.REQUEST_ADMISSION, args, now_ms)
            outcome = self._evaluate(ctx.scope, candidate, now_ms)
            with gate_refusal_explained(self._gate, ctx, Tool.REQUEST_ADMISSION, args, now_ms):
                return self._commit(ctx.scope, actor_of(ctx), idem, candidate, outcome,
                                    now_ms, gate_item)

        return with_rereads(attempt, self._sleep)

    def adjudicate(self, scope: Scope, candidate_id: str, decision: str,
                   approver: str) -> dict[str, Any]:
        """Host route: decide a held candidate (accept | reject); the admission value.

        Idempotent per candidate: repeating the same decision returns the stored result;
        the other decision afterwards is DIGEST_CONFLICT. Forgotten content cannot be
        re-admitted: its record id is tombstoned for good (ALREADY_TERMINAL).
        """
        if decision not in ("accept", "reject"):
            raise InvalidSchema
        intent = digest(DigestKind.INTENT, {"tool": ADJUDICATION_TOOL, "target": candidate_id,
                                            "arguments": {"decision": decision}})
        idem = _Idem(ADJUDICATION_PRINCIPAL, f"adjudicate:{candidate_id}", ADJUDICATION_TOOL,
                     intent)
        actor = Actor(principal=approver, agent_id="host", session_id="adjudication")

        def attempt() -> dict[str, Any]:
            prior = self._prior(scope, idem)
            if prior is not None:
                return prior
            candidate = self._pending(scope, candidate_id)
            now_ms = self._clock.now_ms()
            outcome = self._adjudicated(scope, candidate, decision, now_ms)
            return self._commit(scope, actor, idem, candidate, outcome, now_ms, None)

        return with_rereads(attempt, self._sleep)

    # --- reads and decisions ------------------------------------------------------------

    def _prior(self, scope: Scope, idem: _Idem) -> dict[str, Any] | None:
        prior = stored_result(self._store, scope, idem.principal, idem.key, idem.tool,
                              idem.intent)
        if prior is None:
            return None
        return dump_value(AdmissionValue.model_validate({**prior, "replayed": True}))

    def _pending(self, scope: Scope, candidate_id: str) -> CandidateEntry:
        candidate = self._store.get_candidate(scope, candidate_id)
        if candidate is None or candidate.state != State.PENDING.value:
            raise NotFound
        return candidate

    def _open(self, scope: Scope, candidate: CandidateEntry) -> AdmissionRequest:
        """Decrypt the candidate's material once, in memory only."""
        context = records.encryption_context(scope, candidate.candidate_id)
        wrapped = self._store.get_wrapped_key(scope, candidate.candidate_id)
        if wrapped is None:
            raise NotFound  # shredded meanwhile: the candidate is no longer pending
        key = self._key_vault.decrypt_data_key(wrapped, context)
        try:
            sealed = self._store.load_sealed(scope, candidate.candidate_id,
                                             candidate.blob_chunks)
            plaintext = self._sealer.open(key, sealed, canonical_json(context))
        except BlobMissing:
            # A withdraw or a competing admission may have shredded the chunks after the
            # key read: a candidate no longer pending is NOT_FOUND, not lost material.
            self._pending(scope, candidate.candidate_id)
            raise
        payload, evidence = records.open_material(plaintext)
        return AdmissionRequest(scope=scope, candidate_id=candidate.candidate_id,
                                payload=payload, evidence=evidence)

    def _evaluate(self, scope: Scope, candidate: CandidateEntry, now_ms: int) -> _Outcome:
        running = self._policy.descriptor()
        check_not_stale(running, candidate.policy_version)
        request = self._open(scope, candidate)
        decision = self._policy.decide(request)
        receipt_of = _ReceiptFactory(candidate, running.policy_id, running.version)
        if decision is Decision.ACCEPT:
            return self._acceptance(scope, candidate, request, now_ms, receipt_of, guard=True)
        status = "rejected" if decision is Decision.REJECT else "pending_adjudication"
        return _Outcome(status=status, receipt=receipt_of(status, None, None))

    def _adjudicated(self, scope: Scope, candidate: CandidateEntry, decision: str,
                     now_ms: int) -> _Outcome:
        receipt_of = _ReceiptFactory(candidate, ADJUDICATION_POLICY_ID,
                                      candidate.policy_version)
        if decision == "reject":
            return _Outcome(status="rejected", receipt=receipt_of("rejected", None, None))
        request = self._open(scope, candidate)
        return self._acceptance(scope, candidate, request, now_ms, receipt_of, guard=False)

    def _acceptance(self, scope: Scope, candidate: CandidateEntry, request: AdmissionRequest,
                    now_ms: int, receipt_of: _ReceiptFactory, *, guard: bool) -> _Outcome:
        verdict = self._verifier.verify(request)
        trust = verdict.trust_class
        if guard and self._store.has_tombstone(scope, candidate.payload_digest):
            return _Outcome("pending_adjudication", receipt_of("pending_adjudication", trust,
                                                               None))
        record_id = record_id_for(candidate.record_digest)
        existing = self._store.get_record(scope, record_id)
        if existing is not None:
            if existing.state == State.TOMBSTONED.value:
                if guard:  # guard item missing but the record is gone: still hold it
                    return _Outcome("pending_adjudication",
                                    receipt_of("pending_adjudication", trust, None))
                raise AlreadyTerminal
            if existing.state != State.ACCEPTED_CURRENT.value:
                # Expired, historical, ...: the record is not current, so this is no
                # duplicate, and the same record id cannot be accepted again.
                if not guard:
                    raise IllegalTransition
                return _Outcome("pending_adjudication",
                                receipt_of("pending_adjudication", trust, None))
            return _Outcome("duplicate_exact", receipt_of("duplicate_exact", trust, record_id),
                            record_id=record_id)
        record = records.build_record(candidate.record_digest, request.payload,
                                      trust_class=trust, recorded_at_ms=now_ms)
        receipt = receipt_of("accepted", trust, record_id)
        binding = {
            "trust_class": trust,
            "verifier_id": verdict.verifier_id,
            "evidence_digest": request.evidence["evidence_digest"],
            "decision_receipt_digest": receipts.decision_receipt_digest(receipt),
        }
        return _Outcome("accepted", receipt, record=record, record_id=record_id,
                        payload=request.payload, trust_binding=binding)

    # --- the commit ---------------------------------------------------------------------

    def _commit(self, scope: Scope, actor: Actor, idem: _Idem, candidate: CandidateEntry,
                outcome: _Outcome, now_ms: int,
                gate_item: Mapping[str, Any] | None) -> dict[str, Any]:
        def build(head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
            return _plan(scope, actor, idem, candidate, outcome, now_ms, gate_item, head)

        return commit_fenced(self._store, scope, build, self._sleep)


class _ReceiptFactory:
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


def _plan(scope: Scope, actor: Actor, idem: _Idem, candidate: CandidateEntry,
          outcome: _Outcome, now_ms: int, gate_item: Mapping[str, Any] | None,
          head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
    to_state, operation, candidate_state, shred = _TO_STATE[outcome.status]
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
