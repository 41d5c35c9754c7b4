"""engram_memory_request_admission and the host's adjudication of held candidates.

Order: idempotency replay → the candidate must be pending in this scope (else NOT_FOUND,
indistinguishable from unknown) → confirmation when the host requires it → policy version
check (POLICY_STALE) → decrypt once → policy → verifier → tombstone guard → ONE commit.

Round trips (docs/write_path.md, "Round trips"): the idempotency item, the candidate, its
wrapped key and first ciphertext chunk and the journal head are read together (1); the
KMS Decrypt of the key runs beside the read of what depends on the candidate, the record
id and the tombstone guard (2); the commit (3).
Outcomes: ``accepted`` (record stored, candidate key and ciphertext shredded),
``duplicate_exact`` (the record this candidate would produce already exists and is
accepted_current: its record_id is returned, the candidate is shredded; a record in another
state holds the candidate instead), ``rejected`` (shredded)
and ``pending_adjudication`` (left pending and sealed, for the host route).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from engram_memory.concurrency import in_background
from engram_memory.contract.outputs import AdmissionValue
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
from engram_memory.domain.journal import Actor
from engram_memory.domain.lifecycle import State
from engram_memory.domain.principals import ADJUDICATION_PRINCIPAL
from engram_memory.services.admission_plan import (
    DecidedAdmission,
    ReceiptFactory,
    plan_admission,
)
from engram_memory.services.pipeline import (
    Build,
    Idem,
    MutationCall,
    PipelinePorts,
    PipelineService,
)
from engram_memory.services.policy import check_not_stale
from engram_memory.services.ports.write import (
    AdmissionPolicy,
    AdmissionRequest,
    CandidateEntry,
    EvidenceVerifier,
    KeyVault,
    PolicyDecision,
    ReadRequest,
    ReadResult,
    Sealer,
)

if TYPE_CHECKING:
    from engram_memory.contract.inputs import RequestAdmissionArgs


ADJUDICATION_TOOL = "adjudicate"
ADJUDICATION_POLICY_ID = "host-adjudication"


class AdmissionService(PipelineService):
    """The admission use case (agent tool) and the host's adjudication."""

    def __init__(self, *, key_vault: KeyVault, sealer: Sealer, policy: AdmissionPolicy,
                 verifier: EvidenceVerifier, **ports: Unpack[PipelinePorts]) -> None:
        super().__init__(**ports)
        self._store = ports["store"]
        self._key_vault = key_vault
        self._sealer = sealer
        self._policy = policy
        self._verifier = verifier

    def execute(self, ctx: InvocationContext, model: RequestAdmissionArgs) -> dict[str, Any]:
        """Request admission of a pending candidate; the tool's ``value``."""
        args = canonical_arguments(model)
        call = MutationCall.of_agent(ctx, Tool.REQUEST_ADMISSION, args)
        candidate_id = str(args["candidate_id"])
        return self._pipeline.run(call, lambda: _Admission(self, call, candidate_id, None))

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
        call = MutationCall(
            scope, Idem(ADJUDICATION_PRINCIPAL, f"adjudicate:{candidate_id}",
                        ADJUDICATION_TOOL, intent),
            Actor(principal=approver, agent_id="host", session_id="adjudication"))
        return self._pipeline.run(call, lambda: _Admission(self, call, candidate_id, decision))

    def inspect(self, scope: Scope, candidate_id: str) -> dict[str, Any]:
        """Host review: a held candidate's payload, decrypted in memory for the person who
        adjudicates it. Nothing is written, logged or kept; NOT_FOUND unless held (a
        candidate no admission has held is the agent's, not yet the host's to read)."""
        first = self._store.read_together(scope, ReadRequest(
            candidate_id=candidate_id, wrapped_key_of=candidate_id, chunks=(candidate_id, 1)))
        candidate = _held(first.candidate)
        request, _ = self._open(scope, candidate, first)
        return {"candidate_id": candidate_id, "payload": dict(request.payload)}

    # --- reads and decisions ------------------------------------------------------------

    def _open(self, scope: Scope, candidate: CandidateEntry,
              first: ReadResult) -> tuple[AdmissionRequest, ReadResult]:
        """Decrypt the candidate's material once, in memory only; round trip 2 beside it.

        Beside the KMS Decrypt, one read fetches what depends on the candidate: its
        record id and tombstone guard (and the ciphertext chunks past the first).
        """
        candidate_id, chunks = candidate.candidate_id, candidate.blob_chunks
        context = records.encryption_context(scope, candidate_id)
        wrapped = first.wrapped_key
        if wrapped is None:
            raise NotFound  # shredded meanwhile: the candidate is no longer pending
        key = in_background(lambda: self._key_vault.decrypt_data_key(wrapped, context))
        more_chunks = chunks > len(first.chunks)
        found = self._store.read_together(scope, ReadRequest(
            record_id=record_id_for(candidate.record_digest),
            tombstone_of=candidate.payload_digest,
            chunks=(candidate_id, chunks) if more_chunks else None))
        pieces = (found.chunks if more_chunks else first.chunks)[:chunks]
        data_key = key.result()
        if chunks == 0 or len(pieces) < chunks:
            # A withdraw or a competing admission may have shredded the chunks after the
            # key read: a candidate no longer pending is NOT_FOUND, not lost material.
            _pending(self._store.get_candidate(scope, candidate_id))
            raise BlobMissing
        plaintext = self._sealer.open(data_key, b"".join(pieces), canonical_json(context))
        payload, evidence = records.open_material(plaintext)
        return AdmissionRequest(scope=scope, candidate_id=candidate_id, payload=payload,
                                evidence=evidence), found

    def _evaluate(self, scope: Scope, candidate: CandidateEntry, first: ReadResult,
                  now_ms: int) -> DecidedAdmission:
        running = self._policy.descriptor()
        check_not_stale(running, candidate.policy_version)
        request, found = self._open(scope, candidate, first)
        decision = self._policy.decide(request)
        receipt_of = ReceiptFactory(candidate, running.policy_id, running.version)
        if decision is PolicyDecision.ACCEPT:
            return self._acceptance(candidate, request, found, now_ms, receipt_of, guard=True)
        status = "rejected" if decision is PolicyDecision.REJECT else "pending_adjudication"
        return DecidedAdmission(status=status, receipt=receipt_of(status, None, None))

    def _adjudicated(self, scope: Scope, candidate: CandidateEntry, decision: str,
                     first: ReadResult, now_ms: int) -> DecidedAdmission:
        receipt_of = ReceiptFactory(candidate, ADJUDICATION_POLICY_ID,
                                      candidate.policy_version)
        if decision == "reject":
            return DecidedAdmission(status="rejected", receipt=receipt_of("rejected", None, None))
        request, found = self._open(scope, candidate, first)
        return self._acceptance(candidate, request, found, now_ms, receipt_of, guard=False)

    def _acceptance(self, candidate: CandidateEntry, request: AdmissionRequest,
                    found: ReadResult, now_ms: int, receipt_of: ReceiptFactory, *,
                    guard: bool) -> DecidedAdmission:
        verdict = self._verifier.verify(request)
        trust = verdict.trust_class
        held = DecidedAdmission("pending_adjudication",
                                receipt_of("pending_adjudication", trust, None))
        if guard and found.tombstone:
            return held
        record_id = record_id_for(candidate.record_digest)
        existing = found.record
        if existing is not None:
            if existing.state == State.TOMBSTONED.value:
                if guard:  # guard item missing but the record is gone: still hold it
                    return held
                raise AlreadyTerminal
            if existing.state != State.ACCEPTED_CURRENT.value:
                # Expired, historical, ...: the record is not current, so this is no
                # duplicate, and the same record id cannot be accepted again.
                if not guard:
                    raise IllegalTransition
                return held
            return DecidedAdmission("duplicate_exact",
                                    receipt_of("duplicate_exact", trust, record_id),
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
        return DecidedAdmission("accepted", receipt, record=record, record_id=record_id,
                                payload=request.payload, trust_binding=binding)


def _pending(candidate: CandidateEntry | None) -> CandidateEntry:
    """The candidate, if it is pending (else NOT_FOUND, as for an unknown id)."""
    if candidate is None or candidate.state != State.PENDING.value:
        raise NotFound
    return candidate


def _held(candidate: CandidateEntry | None) -> CandidateEntry:
    """The candidate, if it is held for adjudication (else NOT_FOUND, as for an unknown id)."""
    found = _pending(candidate)
    if not found.held:
        raise NotFound
    return found


class _Admission:
    """One admission attempt: the candidate must be pending; the policy (or the host's
    decision) decides after the gate."""

    value_model = AdmissionValue
    replay_fields: Mapping[str, Any] = {"replayed": True}
    state_behind_gate = False

    def __init__(self, service: AdmissionService, call: MutationCall, candidate_id: str,
                 adjudicated: str | None) -> None:
        self._service, self._call = service, call
        self._candidate_id, self._adjudicated = candidate_id, adjudicated

    def reads(self) -> ReadRequest:
        """Round trip 1: the candidate, its wrapped key and first chunk (+ idem, head)."""
        cid = self._candidate_id
        return ReadRequest(candidate_id=cid, wrapped_key_of=cid, chunks=(cid, 1))

    def check(self, found: ReadResult, now_ms: int) -> CandidateEntry:
        return _pending(found.candidate)

    def decide(self, checked: CandidateEntry, found: ReadResult, now_ms: int) -> Build:
        scope = self._call.scope
        if self._adjudicated is None:
            outcome = self._service._evaluate(scope, checked, found, now_ms)
        else:
            outcome = self._service._adjudicated(scope, checked, self._adjudicated, found,
                                                 now_ms)
        return lambda head: plan_admission(self._call, checked, outcome, now_ms, head)
