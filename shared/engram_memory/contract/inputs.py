"""Closed, strict input models of the six tools (CONTRACT.md §2).

Every object forbids extra fields and every scalar is strict (a bool is not an integer, a
number is not a string). Optional fields are omitted, never ``null``. Cross-references
between payload, components, citations and evidence are checked here, so a model that
validates is internally consistent. Entry point for callers: ``validation.validate_arguments``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, model_validator
from pydantic_core import PydanticCustomError

from engram_memory.contract.types import (
    Attestation,
    CandidateId,
    ComponentText,
    Digest,
    IdempotencyKey,
    Instant,
    OpaqueRef,
    PageCursor,
    PlainText,
    QueryText,
    RecordId,
    SafeInt,
)


def _cross_ref(rule: str) -> PydanticCustomError:
    return PydanticCustomError("engram_cross_reference", "violates {rule}", {"rule": rule})


def _distinct(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise PydanticCustomError("engram_distinct", "values must be distinct")
    return values


def _utf16_key(value: str) -> bytes:
    # JavaScript's default sort (the reference engine's) orders by UTF-16 code units.
    return value.encode("utf-16-be", "surrogatepass")


def _sorted_unique(values: list[str]) -> list[str]:
    keys = [_utf16_key(v) for v in values]
    if any(a >= b for a, b in pairwise(keys)):
        raise PydanticCustomError("engram_sorted_unique", "values must be sorted and unique")
    return values


CitationIds = Annotated[
    list[OpaqueRef],
    Field(min_length=1, max_length=256, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_distinct),
]
FamilyRefs = Annotated[
    list[PlainText],
    Field(max_length=64, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_sorted_unique),
]
Limit = Annotated[int, Strict(), Field(ge=1, le=50)]
MaxPacketBytes = Annotated[int, Strict(), Field(ge=4096, le=1_048_576)]


class ClosedModel(BaseModel):
    """Base of every wire model: closed, strict, immutable, and ``null`` never accepted."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        # Optional fields are omitted on the wire; an explicit null is a schema violation.
        if isinstance(data, dict) and any(value is None for value in data.values()):
            raise PydanticCustomError("engram_null", "null is not accepted")
        return data


class ValidTime(ClosedModel):
    """``{t, t_end?}`` in epoch milliseconds; ``t_end >= t``."""

    t: SafeInt
    t_end: SafeInt | None = None

    @model_validator(mode="after")
    def _ordered(self) -> ValidTime:
        if self.t_end is not None and self.t_end < self.t:
            raise _cross_ref("t_end >= t")
        return self


class Component(ClosedModel):
    """One component of a memory: context, decision or evidence text with its citations."""

    component_id: OpaqueRef
    kind: Literal["context", "decision", "evidence"]
    text: ComponentText
    citation_ids: CitationIds


class PrimaryEvent(ClosedModel):
    """The event the memory is about: when (epoch ms), what type, cited by which citation."""

    at: SafeInt
    type_ref: PlainText
    citation_id: OpaqueRef


class Locator(ClosedModel):
    """Where the cited content lives: an opaque scheme and a value."""

    scheme: PlainText
    value: PlainText


class Citation(ClosedModel):
    """A cited source with the digest of the cited content."""

    citation_id: OpaqueRef
    source_ref: OpaqueRef
    locator: Locator
    content_digest: Digest
    observed_at: Instant | None = None


class Retention(ClosedModel):
    """The requested retention: the derivative rule and an optional expiry instant."""

    derivative_rule: Literal["retain", "make-ineligible"]
    expires_at: Instant | None = None


class Reconciliation(ClosedModel):
    """Reconciliation families the memory joins (sorted by UTF-16 code units, unique)."""

    family_refs: FamilyRefs


def _schema_version_two(value: int) -> int:
    if value != 2:
        raise PydanticCustomError("engram_schema_version", "schema_version must be 2")
    return value


class Payload(ClosedModel):
    """The captured memory (payload schema version 2) with all its cross-references."""

    schema_version: Annotated[
        int, Strict(), AfterValidator(_schema_version_two), Field(json_schema_extra={"const": 2})
    ]
    purpose_ref: OpaqueRef
    valid_time: ValidTime
    components: Annotated[list[Component], Field(min_length=1, max_length=64)]
    primary_component_id: OpaqueRef
    primary_event: PrimaryEvent
    citations: Annotated[list[Citation], Field(min_length=1, max_length=256)]
    retention: Retention | None = None
    reconciliation: Reconciliation | None = None

    @model_validator(mode="after")
    def _references_resolve(self) -> Payload:
        citation_ids = [c.citation_id for c in self.citations]
        if len(set(citation_ids)) != len(citation_ids):
            raise _cross_ref("citation_id values unique")
        component_ids = [c.component_id for c in self.components]
        if len(set(component_ids)) != len(component_ids):
            raise _cross_ref("component_id values unique")
        known = set(citation_ids)
        if any(cid not in known for c in self.components for cid in c.citation_ids):
            raise _cross_ref("component citations resolve")
        primary = next(
            (c for c in self.components if c.component_id == self.primary_component_id), None
        )
        if primary is None:
            raise _cross_ref("primary_component_id resolves")
        event_citation = self.primary_event.citation_id
        if event_citation not in known or event_citation not in primary.citation_ids:
            raise _cross_ref("primary_event.citation_id in citations and primary component")
        return self


class Evidence(ClosedModel):
    """The evidence offered for the capture; its citations resolve in the payload."""

    evidence_ref: OpaqueRef
    evidence_digest: Digest
    citation_ids: CitationIds
    attestation: Attestation | None = None


class CapabilityPolicy(ClosedModel):
    """Which ranking channels the search must use and whether network use is allowed."""

    minimum_channels: Literal["lexical", "lexical_and_semantic"] = "lexical"
    network: Literal["forbid", "allow"] = "forbid"


class SearchArgs(ClosedModel):
    """Arguments of engram_memory_search."""

    query: QueryText
    purpose_ref: OpaqueRef
    limit: Limit = 10
    max_packet_bytes: MaxPacketBytes = 65_536
    capability_policy: CapabilityPolicy = Field(default_factory=CapabilityPolicy)
    page_cursor: PageCursor | None = None


class GetArgs(ClosedModel):
    """Arguments of engram_memory_get."""

    record_id: RecordId
    purpose_ref: OpaqueRef
    max_packet_bytes: MaxPacketBytes = 65_536


class CaptureArgs(ClosedModel):
    """Arguments of engram_memory_capture."""

    idempotency_key: IdempotencyKey
    payload: Payload
    evidence: Evidence

    @model_validator(mode="after")
    def _evidence_resolves(self) -> CaptureArgs:
        known = {c.citation_id for c in self.payload.citations}
        if any(cid not in known for cid in self.evidence.citation_ids):
            raise _cross_ref("evidence citations resolve")
        return self


class RequestAdmissionArgs(ClosedModel):
    """Arguments of engram_memory_request_admission."""

    candidate_id: CandidateId
    idempotency_key: IdempotencyKey


class WithdrawArgs(ClosedModel):
    """Arguments of engram_memory_withdraw."""

    candidate_id: CandidateId
    idempotency_key: IdempotencyKey
    reason_ref: OpaqueRef


class ForgetArgs(ClosedModel):
    """Arguments of engram_memory_forget."""

    record_id: RecordId
    idempotency_key: IdempotencyKey
    reason_ref: OpaqueRef
