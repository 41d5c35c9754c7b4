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
from typing import TYPE_CHECKING, Any

from engram_memory.contract.outputs import AdmissionValue, dump_value
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import receipts, records
from engram_memory.domain.canonical import (
    DigestKind,
    canonical_json,
    digest,
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
from engram_memory.domain.journal import Actor, JournalHead
from engram_memory.domain.lifecycle import State
from engram_memory.domain.principals import ADJUDICATION_PRINCIPAL
from engram_memory.services.admission_plan import (
    Idem,
    Outcome,
    ReceiptFactory,
    plan_admission,
)
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
    Clock,
    ConfirmationGate,
    Decision,
    EvidenceVerifier,
    KeyVault,
    MemoryStore,
    MutationPlan,
    Sealer,
)

if TYPE_CHECKING:
    from pydantic import BaseModel


ADJUDICATION_TOOL = "adjudicate"
ADJUDICATION_POLICY_ID = "host-adjudication"


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
        idem = Idem(ctx.principal, args["idempotency_key"], Tool.REQUEST_ADMISSION.value,
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
        idem = Idem(ADJUDICATION_PRINCIPAL, f"adjudicate:{candidate_id}", ADJUDICATION_TOOL,
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

    def _prior(self, scope: Scope, idem: Idem) -> dict[str, Any] | None:
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

    def _evaluate(self, scope: Scope, candidate: CandidateEntry, now_ms: int) -> Outcome:
        running = self._policy.descriptor()
        check_not_stale(running, candidate.policy_version)
        request = self._open(scope, candidate)
        decision = self._policy.decide(request)
        receipt_of = ReceiptFactory(candidate, running.policy_id, running.version)
        if decision is Decision.ACCEPT:
            return self._acceptance(scope, candidate, request, now_ms, receipt_of, guard=True)
        status = "rejected" if decision is Decision.REJECT else "pending_adjudication"
        return Outcome(status=status, receipt=receipt_of(status, None, None))

    def _adjudicated(self, scope: Scope, candidate: CandidateEntry, decision: str,
                     now_ms: int) -> Outcome:
        receipt_of = ReceiptFactory(candidate, ADJUDICATION_POLICY_ID,
                                      candidate.policy_version)
        if decision == "reject":
            return Outcome(status="rejected", receipt=receipt_of("rejected", None, None))
        request = self._open(scope, candidate)
        return self._acceptance(scope, candidate, request, now_ms, receipt_of, guard=False)

    def _acceptance(self, scope: Scope, candidate: CandidateEntry, request: AdmissionRequest,
                    now_ms: int, receipt_of: ReceiptFactory, *, guard: bool) -> Outcome:
        verdict = self._verifier.verify(request)
        trust = verdict.trust_class
        if guard and self._store.has_tombstone(scope, candidate.payload_digest):
            return Outcome("pending_adjudication", receipt_of("pending_adjudication", trust,
                                                               None))
        record_id = record_id_for(candidate.record_digest)
        existing = self._store.get_record(scope, record_id)
        if existing is not None:
            if existing.state == State.TOMBSTONED.value:
                if guard:  # guard item missing but the record is gone: still hold it
                    return Outcome("pending_adjudication",
                                    receipt_of("pending_adjudication", trust, None))
                raise AlreadyTerminal
            if existing.state != State.ACCEPTED_CURRENT.value:
                # Expired, historical, ...: the record is not current, so this is no
                # duplicate, and the same record id cannot be accepted again.
                if not guard:
                    raise IllegalTransition
                return Outcome("pending_adjudication",
                                receipt_of("pending_adjudication", trust, None))
            return Outcome("duplicate_exact", receipt_of("duplicate_exact", trust, record_id),
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
        return Outcome("accepted", receipt, record=record, record_id=record_id,
                        payload=request.payload, trust_binding=binding)

    # --- the commit ---------------------------------------------------------------------

    def _commit(self, scope: Scope, actor: Actor, idem: Idem, candidate: CandidateEntry,
                outcome: Outcome, now_ms: int,
                gate_item: Mapping[str, Any] | None) -> dict[str, Any]:
        def build(head: JournalHead) -> tuple[MutationPlan, dict[str, Any]]:
            return plan_admission(scope, actor, idem, candidate, outcome, now_ms, gate_item,
                                  head)

        return commit_fenced(self._store, scope, build, self._sleep)
