"""engram_memory_capture: screen, encrypt and commit a pending candidate.

Order: purpose binding → idempotency replay (before anything else, so a replay reuses the
retention resolved at the first capture and never needs the gate again) → secret screen →
retention and reconciliation rules → the record size bound (domain/packet_bound.py) →
confirmation (when the host requires it) → fresh data key + AES-256-GCM seal → ONE commit
(idempotency, candidate, ciphertext, wrapped key, journal event). Pending content is never
logged: only ids and digests leave this module.
The steps every mutation shares are services/pipeline.py.

Round trips (docs/write_path.md, "Round trips"): the idempotency item and the journal head
are read together while KMS generates the data key beside them (1); the commit (2). The
key is generated even when the read then finds a replay or the input is refused: one KMS
call that stores nothing, for one round trip less on every capture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from engram_memory.concurrency import in_background
from engram_memory.contract.outputs import CaptureValue, dump_value
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import records
from engram_memory.domain.canonical import canonical_json, format_cursor
from engram_memory.domain.context import InvocationContext, Tool
from engram_memory.domain.errors import InvalidSchema, Unauthorized
from engram_memory.domain.journal import JournalHead, build_event
from engram_memory.domain.lifecycle import State
from engram_memory.domain.receipts import capture_transaction_digest
from engram_memory.screening.secrets import capture_texts, find_secret
from engram_memory.services.pipeline import (
    Build,
    Built,
    MutationCall,
    PipelinePorts,
    PipelineService,
)
from engram_memory.services.ports.write import (
    AdmissionPolicy,
    CandidateEntry,
    KeyVault,
    PutCandidate,
    ReadRequest,
    ReadResult,
    Sealer,
)

if TYPE_CHECKING:

    from engram_memory.contract.inputs import CaptureArgs


@dataclass(frozen=True, slots=True)
class CaptureLimits:
    """Host retention and reconciliation consent (from settings)."""

    retain_allowed: bool
    retention_ceiling_ms: int
    reconciliation_families: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Sealing:
    """What a capture attempt seals with: keys, cipher, policy and the host's limits."""

    key_vault: KeyVault
    sealer: Sealer
    policy: AdmissionPolicy
    limits: CaptureLimits


class CaptureService(PipelineService):
    """The capture use case."""

    def __init__(self, *, key_vault: KeyVault, sealer: Sealer, policy: AdmissionPolicy,
                 limits: CaptureLimits, **ports: Unpack[PipelinePorts]) -> None:
        super().__init__(**ports)
        self._sealing = _Sealing(key_vault, sealer, policy, limits)

    def execute(self, ctx: InvocationContext, capture: CaptureArgs) -> dict[str, Any]:
        """Capture the validated arguments; the tool's ``value``."""
        args = canonical_arguments(capture)
        # The endpoint refuses a purpose mismatch already; refuse here too, defensively.
        if args["payload"]["purpose_ref"] != ctx.purpose_ref:
            raise Unauthorized
        call = MutationCall.of_agent(ctx, Tool.CAPTURE, args)
        return self._pipeline.run(call, lambda: Capture(self._sealing, call, capture, args))


class Capture:
    """One capture attempt: its data key is generated beside the pipeline's read."""

    value_model = CaptureValue
    # Re-validated through the model: same field order, so the same bytes.
    replay_fields: Mapping[str, Any] = {"status": "duplicate_exact"}
    state_behind_gate = False

    def __init__(self, sealing: _Sealing, call: MutationCall, capture: CaptureArgs,
                 args: dict[str, Any]) -> None:
        self._sealing, self._call, self._capture, self._args = sealing, call, capture, args
        self._candidate_id = records.candidate_id_for(call.scope, call.idem.principal,
                                                      call.idem.key)
        self._context = records.encryption_context(call.scope, self._candidate_id)
        self._data_key = in_background(
            lambda: sealing.key_vault.generate_data_key(self._context))

    def reads(self) -> ReadRequest:
        return ReadRequest()

    def check(self, found: ReadResult, now_ms: int) -> dict[str, Any]:
        """Secret screen, retention and reconciliation rules; the effective payload."""
        if any(find_secret(text) is not None for text in capture_texts(
                self._capture.payload, self._capture.evidence)):
            raise InvalidSchema
        payload, limits = self._args["payload"], self._sealing.limits
        retention = records.resolve_retention(
            payload.get("retention"), now_ms=now_ms, retain_allowed=limits.retain_allowed,
            ceiling_ms=limits.retention_ceiling_ms)
        records.check_reconciliation(payload, limits.reconciliation_families)
        effective = records.effective_payload(payload, retention)
        # Every admitted record must be deliverable at the largest packet size.
        records.check_record_bound(self._call.scope, effective, now_ms)
        return effective

    def decide(self, checked: dict[str, Any], found: ReadResult, now_ms: int) -> Build:
        """Seal the material under the fresh data key; the candidate to commit."""
        policy = self._sealing.policy.descriptor()
        data_key = self._data_key.result()
        sealed = self._sealing.sealer.seal(
            data_key.plaintext, records.seal_material(checked, self._args["evidence"]),
            canonical_json(self._context))
        candidate = CandidateEntry(
            candidate_id=self._candidate_id, state=State.PENDING.value,
            blob_chunks=0,  # the store decides the chunking
            record_digest=records.record_digest_for(self._call.scope, checked),
            payload_digest=records.payload_digest(checked), policy_id=policy.policy_id,
            policy_version=policy.version, captured_at_ms=now_ms)

        def build(head: JournalHead) -> Built:
            event = build_event(
                head, scope=self._call.scope, operation="capture",
                subject={"candidate_id": candidate.candidate_id}, from_state=None,
                to_state=State.PENDING.value, actor=self._call.actor, at_ms=now_ms,
                digests={"payload_digest": candidate.payload_digest,
                         "record_digest": candidate.record_digest,
                         "intent_digest": self._call.idem.intent})
            cursor = format_cursor(event.cursor)
            value = dump_value(CaptureValue(
                status="committed_pending", candidate_id=candidate.candidate_id,
                record_digest=candidate.record_digest, cursor=cursor,
                transaction_receipt_digest=capture_transaction_digest(
                    candidate.candidate_id, candidate.record_digest, cursor)))
            change = PutCandidate(entry=candidate, sealed=sealed, wrapped_key=data_key.wrapped,
                                  key_id=data_key.key_id, cursor=event.cursor)
            return Built(event, (change,), value)

        return build
