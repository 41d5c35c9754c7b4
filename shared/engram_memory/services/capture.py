"""engram_memory_capture: screen, encrypt and commit a pending candidate.

Order: purpose binding → idempotency replay (before anything else, so a replay reuses the
retention resolved at the first capture and never needs the gate again) → secret screen →
retention and reconciliation rules → confirmation (when the host requires it) → fresh data
key + AES-256-GCM seal → ONE commit (idempotency, candidate, ciphertext, wrapped key,
journal event). Pending content is never logged: only ids and digests leave this module.

Round trips (docs/write_path.md, "Round trips"): the idempotency item and the journal head
are read together while KMS generates the data key beside them (1); the commit (2). The
key is generated even when the read then finds a replay or the input is refused: one KMS
call that stores nothing, for one round trip less on every capture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from engram_memory.concurrency import in_background
from engram_memory.contract.outputs import CaptureValue, dump_value
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain import records
from engram_memory.domain.canonical import canonical_json, format_cursor
from engram_memory.domain.context import InvocationContext, Tool
from engram_memory.domain.errors import InvalidSchema, Unauthorized
from engram_memory.domain.intent import intent_digest
from engram_memory.domain.journal import JournalHead, build_event
from engram_memory.domain.lifecycle import State
from engram_memory.domain.receipts import capture_transaction_digest
from engram_memory.screening.secrets import capture_texts, find_secret
from engram_memory.services.mutation import (
    Sleep,
    actor_of,
    commit_fenced,
    gate_element,
    gate_refusal_explained,
    replayed,
    with_rereads,
)
from engram_memory.services.ports import (
    AdmissionPolicy,
    CandidateEntry,
    Clock,
    ConfirmationGate,
    DataKey,
    KeyVault,
    MemoryStore,
    MutationPlan,
    PutCandidate,
    ReadRequest,
    Sealer,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from pydantic import BaseModel

    from engram_memory.contract.inputs import CaptureArgs


@dataclass(frozen=True, slots=True)
class CaptureLimits:
    """Host retention and reconciliation consent (from settings)."""

    retain_allowed: bool
    retention_ceiling_ms: int
    reconciliation_families: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Prepared:
    candidate: CandidateEntry
    sealed: bytes
    wrapped_key: bytes
    key_id: str
    gate_item: Mapping[str, Any] | None
    now_ms: int


class CaptureService:
    """The capture use case."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        key_vault: KeyVault,
        sealer: Sealer,
        policy: AdmissionPolicy,
        gate: ConfirmationGate,
        clock: Clock,
        sleep: Sleep,
        limits: CaptureLimits,
    ) -> None:
        self._store = store
        self._key_vault = key_vault
        self._sealer = sealer
        self._policy = policy
        self._gate = gate
        self._clock = clock
        self._sleep = sleep
        self._limits = limits

    def execute(self, ctx: InvocationContext, model: BaseModel) -> dict[str, Any]:
        """Capture the validated arguments; the tool's ``value``."""
        capture = cast("CaptureArgs", model)
        args = canonical_arguments(capture)
        # The endpoint refuses a purpose mismatch already; refuse here too, defensively.
        if args["payload"]["purpose_ref"] != ctx.purpose_ref:
            raise Unauthorized
        intent = intent_digest(Tool.CAPTURE, args)
        return with_rereads(lambda: self._attempt(ctx, capture, args, intent), self._sleep)

    def _attempt(
        self, ctx: InvocationContext, capture: CaptureArgs, args: dict[str, Any], intent: str
    ) -> dict[str, Any]:
        key = args["idempotency_key"]
        candidate_id = records.candidate_id_for(ctx.scope, ctx.principal, key)
        context = records.encryption_context(ctx.scope, candidate_id)
        data_key = in_background(lambda: self._key_vault.generate_data_key(context))
        first = self._store.read_together(ctx.scope, ReadRequest(
            idempotency=(ctx.principal, key), head=True))
        prior = replayed(first.idempotency, Tool.CAPTURE.value, intent)
        if prior is not None:
            # Re-validated through the model: same field order, so the same bytes.
            return dump_value(CaptureValue.model_validate({**prior, "status": "duplicate_exact"}))
        if any(find_secret(text) is not None for text in capture_texts(capture.payload,
                                                                        capture.evidence)):
            raise InvalidSchema
        prepared = self._prepare(ctx, args, data_key)
        with gate_refusal_explained(self._gate, ctx, Tool.CAPTURE, args, prepared.now_ms):
            return commit_fenced(
                self._store,
                ctx.scope,
                lambda head: self._plan(ctx, args, intent, prepared, head),
                self._sleep,
                first.head,
            )

    def _prepare(self, ctx: InvocationContext, args: dict[str, Any],
                 pending_key: Future[DataKey]) -> _Prepared:
        now_ms = self._clock.now_ms()
        payload = args["payload"]
        retention = records.resolve_retention(
            payload.get("retention"),
            now_ms=now_ms,
            retain_allowed=self._limits.retain_allowed,
            ceiling_ms=self._limits.retention_ceiling_ms,
        )
        records.check_reconciliation(payload, self._limits.reconciliation_families)
        gate_item = gate_element(self._gate, ctx, Tool.CAPTURE, args, now_ms)
        policy = self._policy.descriptor()
        effective = records.effective_payload(payload, retention)
        candidate_id = records.candidate_id_for(ctx.scope, ctx.principal,
                                                args["idempotency_key"])
        context = records.encryption_context(ctx.scope, candidate_id)
        data_key = pending_key.result()
        sealed = self._sealer.seal(
            data_key.plaintext,
            records.seal_material(effective, args["evidence"]),
            canonical_json(context),
        )
        candidate = CandidateEntry(
            candidate_id=candidate_id,
            state=State.PENDING.value,
            blob_chunks=0,  # the store decides the chunking
            record_digest=records.record_digest_for(ctx.scope, effective),
            payload_digest=records.payload_digest(effective),
            policy_id=policy.policy_id,
            policy_version=policy.version,
            captured_at_ms=now_ms,
        )
        return _Prepared(candidate, sealed, data_key.wrapped, data_key.key_id, gate_item, now_ms)

    def _plan(
        self,
        ctx: InvocationContext,
        args: dict[str, Any],
        intent: str,
        prepared: _Prepared,
        head: JournalHead,
    ) -> tuple[MutationPlan, dict[str, Any]]:
        candidate = prepared.candidate
        event = build_event(
            head,
            scope=ctx.scope,
            operation="capture",
            subject={"candidate_id": candidate.candidate_id},
            from_state=None,
            to_state=State.PENDING.value,
            actor=actor_of(ctx),
            at_ms=prepared.now_ms,
            digests={
                "payload_digest": candidate.payload_digest,
                "record_digest": candidate.record_digest,
                "intent_digest": intent,
            },
        )
        cursor = format_cursor(event.cursor)
        value = dump_value(CaptureValue(
            status="committed_pending",
            candidate_id=candidate.candidate_id,
            record_digest=candidate.record_digest,
            cursor=cursor,
            transaction_receipt_digest=capture_transaction_digest(
                candidate.candidate_id, candidate.record_digest, cursor
            ),
        ))
        change = PutCandidate(
            entry=candidate,
            sealed=prepared.sealed,
            wrapped_key=prepared.wrapped_key,
            key_id=prepared.key_id,
            cursor=event.cursor,
        )
        plan = MutationPlan(
            scope=ctx.scope,
            principal=ctx.principal,
            idempotency_key=args["idempotency_key"],
            tool=Tool.CAPTURE.value,
            intent_digest=intent,
            result=value,
            head=head,
            event=event,
            changes=(change,),
            gate_item=prepared.gate_item,
            at_ms=prepared.now_ms,
        )
        return plan, value
