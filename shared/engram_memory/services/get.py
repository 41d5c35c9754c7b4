"""engram_memory_get: one record by id, if and only if it is currently eligible.

Every refusal (unknown id, another scope, pending, rejected, withdrawn, tombstoned,
expired, outside valid time) is the same NOT_FOUND after the same two reads (journal head,
then the record item), so neither the response nor its timing tells them apart.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engram_memory.contract.inputs import GetArgs
from engram_memory.contract.outputs import GetValue
from engram_memory.contract.validation import canonical_arguments
from engram_memory.domain.canonical import DigestKind, digest, digest_without
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import (
    NotFound,
    ProjectionOversized,
    StoreUnavailable,
    Unauthorized,
)
from engram_memory.domain.instant import format_instant
from engram_memory.domain.intent import operation_digest
from engram_memory.domain.packet_bound import LARGEST_PACKET_BYTES
from engram_memory.domain.receipts import authorization_receipt, authorization_receipt_digest
from engram_memory.services.budget import fit_record, size_of
from engram_memory.services.eligibility import (
    PURPOSE_SCOPE_BOUND,
    is_eligible,
    visible_purpose,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from engram_memory.domain.context import InvocationContext
    from engram_memory.services.ports.read import RecordReader, RecordRow
    from engram_memory.services.ports.write import Clock
    from engram_memory.services.redaction import Redactor


def read_receipt_digest(receipt: Mapping[str, Any]) -> str:
    """Digest of a read receipt over every field but ``receipt_digest``."""
    return digest_without(DigestKind.READ_RECEIPT, receipt, "receipt_digest")


def packet_digest(value: Mapping[str, Any]) -> str:
    """Digest of a get value over every field but ``packet_digest``."""
    return digest_without(DigestKind.PACKET, value, "packet_digest")


def revalidation_digest(row: RecordRow, system_as_of: str, valid_as_of: str) -> str:
    """What the eligibility check saw: the record's state and cursor at the pinned points."""
    return digest(DigestKind.REVALIDATION_RECEIPT, {
        "record_id": row.record_id,
        "record_digest": row.record_digest,
        "state": row.state,
        "recorded_cursor": str(row.recorded_cursor),
        "system_as_of": system_as_of,
        "valid_as_of": valid_as_of,
    })


class GetService:
    """The get use case (a ToolService: ``(ctx, args) -> value``)."""

    def __init__(self, records: RecordReader, clock: Clock, redactor: Redactor, *,
                 purpose_scope: str = PURPOSE_SCOPE_BOUND) -> None:
        self._records = records
        self._clock = clock
        self._redactor = redactor
        self._purpose_scope = purpose_scope

    def execute(self, ctx: InvocationContext, args: GetArgs) -> dict[str, Any]:
        """Return the record packet or raise NotFound."""
        if args.purpose_ref != ctx.purpose_ref:
            raise Unauthorized
        system_as_of = self._records.head_cursor(ctx.scope)
        now_ms = self._clock.now_ms()
        purpose = visible_purpose(ctx.purpose_ref, self._purpose_scope)
        # Filtered by the store: another purpose's record costs what an unknown id costs.
        row = self._records.get_visible_record(ctx.scope, args.record_id, purpose)
        if row is None or not is_eligible(row, system_as_of=system_as_of,
                                          valid_as_of_ms=now_ms, purpose=purpose):
            raise NotFound
        value = self._fitted(ctx, args, row, str(system_as_of), format_instant(now_ms))
        try:
            GetValue.model_validate(value)
        except ValidationError:
            raise StoreUnavailable from None  # never hand out a value off the contract
        return value

    def _fitted(self, ctx: InvocationContext, args: GetArgs, row: RecordRow,
                system_as_of: str, valid_as_of: str) -> dict[str, Any]:
        """The whole value within ``max_packet_bytes``, else PROJECTION_OVERSIZED when the
        largest budget would deliver it whole; a record too large even for that (stored
        before capture's bound) gets its largest fields redacted instead (budget.py)."""
        value = self._value(ctx, args, row, system_as_of, valid_as_of)
        whole = size_of(value)
        if whole <= args.max_packet_bytes:
            return value
        if whole <= LARGEST_PACKET_BYTES:
            raise ProjectionOversized
        return fit_record(partial(self._value, ctx, args, row, system_as_of, valid_as_of),
                          args.max_packet_bytes)

    def _value(self, ctx: InvocationContext, args: GetArgs, row: RecordRow,
               system_as_of: str, valid_as_of: str,
               withheld: frozenset[str] = frozenset()) -> dict[str, Any]:
        redacted = self._redactor.redact(row.record_id, row.record or {}, withheld)
        authorization = authorization_receipt(
            tool=Tool.GET.value,
            target=row.record_id,
            principal=ctx.principal,
            agent_id=ctx.agent_id,
            session_id=ctx.session_id,
            operation_digest=operation_digest(Tool.GET, canonical_arguments(args)),
            confirmation_ref=None,
        )
        receipt: dict[str, Any] = {
            "record_id": row.record_id,
            "record_digest": row.record_digest,
            "valid_as_of": valid_as_of,
            "system_as_of": system_as_of,
            # The record was read (strongly consistent) after pinning the head: its state
            # reflects every event through system_as_of.
            "validated_through_cursor": system_as_of,
            "authorization_receipt_digest": authorization_receipt_digest(authorization),
            "revalidation_receipt_digest": revalidation_digest(row, system_as_of, valid_as_of),
            "checked_at": valid_as_of,
        }
        receipt["receipt_digest"] = read_receipt_digest(receipt)
        value: dict[str, Any] = {
            "record": redacted.record,
            "redacted_fields": redacted.redacted_fields,
            "redaction_receipt_digest": redacted.receipt_digest,
            "read_receipt": receipt,
        }
        value["packet_digest"] = packet_digest(value)
        return value
