"""Closed output models of each tool's ``value`` (CONTRACT.md §2).

Services build a value by instantiating these models and dumping them with
``model_dump(mode="json", exclude_none=True)``: optional fields are omitted, never null.
The published output schemas (``schemas.output_schema``) are generated from these models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from engram_memory.contract.inputs import (
    Citation,
    Component,
    PrimaryEvent,
    Reconciliation,
    Retention,
    ValidTime,
)
from engram_memory.contract.types import (
    CandidateId,
    DecimalCursor,
    Digest,
    Instant,
    OpaqueRef,
    PageCursor,
    RecordId,
)

JSON_POINTER_PATTERN = r"^(/([^/~]|~[01])*)+$"

JsonPointer = Annotated[str, Field(pattern=JSON_POINTER_PATTERN)]
NonEmpty = Annotated[str, Field(min_length=1)]


class OutputModel(BaseModel):
    """Base of every output model: closed (an unknown field is a bug, not data)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class RecordView(OutputModel):
    """A current record as returned by get/search; after redaction only record_id is sure."""

    record_id: RecordId
    record_digest: Digest | None = None
    state: Literal["accepted_current"] | None = None
    purpose_ref: OpaqueRef | None = None
    valid_time: ValidTime | None = None
    components: list[Component] | None = None
    primary_component_id: OpaqueRef | None = None
    primary_event: PrimaryEvent | None = None
    citations: list[Citation] | None = None
    retention: Retention | None = None
    reconciliation: Reconciliation | None = None
    trust_class: NonEmpty | None = None
    recorded_at: Instant | None = None
    cursor: DecimalCursor | None = None


class RecordPacket(OutputModel):
    """One search hit: the redacted record, what was redacted, its score and rank."""

    record: RecordView
    redacted_fields: list[JsonPointer]
    redaction_receipt_digest: Digest
    score: float
    rank: Annotated[int, Field(ge=1)]


class RankChannel(OutputModel):
    """One ranking channel a search used: its model/profile, version, index and config."""

    channel: Literal["lexical", "semantic"]
    model: NonEmpty
    version: NonEmpty
    index: NonEmpty
    config_digest: Digest


class RankReceipt(OutputModel):
    """How a search ranked: request, profile, config, channels, as-of points, ordered ids."""

    request_digest: Digest
    profile: NonEmpty
    profile_version: NonEmpty
    config_digest: Digest
    channels: Annotated[list[RankChannel], Field(min_length=1, max_length=2)]
    valid_as_of: Instant
    system_as_of: DecimalCursor
    candidate_count: Annotated[int, Field(ge=0)]
    ordered_ids_digest: Digest
    revalidation_digest: Digest
    issued_at: Instant
    receipt_digest: Digest


class SearchValue(OutputModel):
    """Value of engram_memory_search."""

    records: list[RecordPacket]
    rank_receipt: RankReceipt
    next_page_cursor: PageCursor | None = None
    response_digest: Digest


class ReadReceipt(OutputModel):
    """What a get read and checked, and through which journal cursor."""

    record_id: RecordId
    record_digest: Digest
    valid_as_of: Instant
    system_as_of: DecimalCursor
    validated_through_cursor: DecimalCursor
    authorization_receipt_digest: Digest
    revalidation_receipt_digest: Digest
    checked_at: Instant
    receipt_digest: Digest


class GetValue(OutputModel):
    """Value of engram_memory_get."""

    record: RecordView
    redacted_fields: list[JsonPointer]
    redaction_receipt_digest: Digest
    read_receipt: ReadReceipt
    packet_digest: Digest


class CaptureValue(OutputModel):
    """Value of engram_memory_capture."""

    status: Literal["committed_pending", "duplicate_exact"]
    candidate_id: CandidateId
    record_digest: Digest | None = None
    cursor: DecimalCursor
    transaction_receipt_digest: Digest


class AdmissionOutcome(OutputModel):
    """The admission decision on a candidate; ``accepted`` always carries a record_id."""

    status: Literal["accepted", "rejected", "pending_adjudication", "duplicate_exact"]
    candidate_id: CandidateId
    record_id: RecordId | None = None
    cursor: DecimalCursor
    decision_receipt_digest: Digest
    transaction_receipt_digest: Digest

    @model_validator(mode="after")
    def _accepted_names_record(self) -> AdmissionOutcome:
        if self.status == "accepted" and self.record_id is None:
            raise PydanticCustomError("engram_accepted_record", "accepted requires record_id")
        return self


class AdmissionValue(OutputModel):
    """Value of engram_memory_request_admission."""

    outcome: AdmissionOutcome
    replayed: bool


class FixedFieldsReceipt(OutputModel):
    """A receipt whose literal fields have defaults yet are always emitted: the published
    schema lists them as ``required`` (a client may rely on them)."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class WithdrawReceipt(FixedFieldsReceipt):
    """The journal receipt of a withdrawal (pending → withdrawn)."""

    event_id: NonEmpty
    operation: Literal["withdraw"] = "withdraw"
    from_state: Literal["pending"] = "pending"
    to_state: Literal["withdrawn"] = "withdrawn"
    cursor: DecimalCursor
    event_digest: Digest
    authorization_receipt_digest: Digest
    transaction_receipt_digest: Digest


class WithdrawValue(OutputModel):
    """Value of engram_memory_withdraw."""

    receipt: WithdrawReceipt
    replayed: bool
    key_destruction: Literal["pending", "complete"]


ForgettableState = Literal[
    "accepted_current", "accepted_disputed", "historical", "expired", "trust_invalid"
]


class ForgetReceipt(FixedFieldsReceipt):
    """The journal receipt of a tombstone (an admitted state → tombstoned)."""

    event_id: NonEmpty
    operation: Literal["tombstone"] = "tombstone"
    from_state: ForgettableState
    to_state: Literal["tombstoned"] = "tombstoned"
    cursor: DecimalCursor
    event_digest: Digest
    authorization_receipt_digest: Digest
    transaction_receipt_digest: Digest


class ForgetValue(OutputModel):
    """Value of engram_memory_forget."""

    receipt: ForgetReceipt
    replayed: bool
    projection_invalidation: Literal["pending", "complete"]
    coverage_receipt_digest: Digest | None = None


def dump_value(value: OutputModel) -> dict[str, Any]:
    """The JSON form of a value as it goes into the envelope (optional fields omitted)."""
    return value.model_dump(mode="json", exclude_none=True)
