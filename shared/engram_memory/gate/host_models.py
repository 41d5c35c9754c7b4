"""Closed request bodies of the host-only routes (``/host/...``).

Every model forbids extra fields and uses strict types; any violation becomes one
constant 400 answer. Identifiers are opaque references (1 to 512 UTF-8 bytes, NFC) and
never contain ``#``, so no body can reach another scope's storage keys.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from engram_memory.domain.confirmation import MAX_TTL_SECONDS
from engram_memory.services.waiting import CURSOR_RE, DEFAULT_PAGE, MAX_PAGE


def _opaque(value: str) -> str:
    size = len(value.encode("utf-8", errors="replace"))
    if not 1 <= size <= 512 or "#" in value or not unicodedata.is_normalized("NFC", value):
        raise ValueError("not an opaque reference")
    return value


def _target(value: str) -> str:
    # capture has no target (""), every other gated tool names a candidate or record.
    return value if value == "" else _opaque(value)


OpaqueRef = Annotated[str, AfterValidator(_opaque)]
Target = Annotated[str, AfterValidator(_target)]
GatedCapability = Literal["capture", "request_admission", "withdraw", "forget"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ConfirmationRequestBody(_Closed):
    """``POST /host/confirmations``: what the human is asked to approve.

    Either ``arguments`` (the exact arguments the host will let the agent send; the
    server validates them and derives target and operation digest with the same
    function the gated tool uses) or ``target`` + ``operation_digest`` (computed by the
    host with ``engram_memory.domain.intent.operation_digest``).
    """

    workspace_id: OpaqueRef
    capability: GatedCapability
    principal: OpaqueRef
    target: Target | None = None
    operation_digest: str | None = None
    arguments: dict[str, Any] | None = None
    ttl_seconds: int = Field(default=MAX_TTL_SECONDS, ge=1, le=MAX_TTL_SECONDS)

    @model_validator(mode="after")
    def _one_way_to_name_the_operation(self) -> ConfirmationRequestBody:
        by_arguments = self.arguments is not None and self.operation_digest is None
        by_digest = (self.arguments is None and self.operation_digest is not None
                     and self.target is not None)
        if not (by_arguments or by_digest):
            raise ValueError("give arguments, or target and operation_digest")
        return self


class DecisionBody(_Closed):
    """``POST /host/confirmations/{ref}/decision``: the human's decision."""

    workspace_id: OpaqueRef
    decision: Literal["approve", "reject"]
    approver: OpaqueRef


class AdjudicationBody(_Closed):
    """``POST /host/adjudications/{candidate_id}``: decide a pending_adjudication candidate."""

    workspace_id: OpaqueRef
    decision: Literal["accept", "reject"]
    approver: OpaqueRef | None = None


class ListQuery(_Closed):
    """``GET /host/confirmations?workspace_id=&state=pending`` and
    ``GET /host/adjudications?workspace_id=``: one page of what waits.

    Query strings are strings: ``limit`` is parsed by the route before validation.
    """

    workspace_id: OpaqueRef
    state: Literal["pending"] | None = None
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE)
    cursor: Annotated[str, Field(pattern=CURSOR_RE.pattern)] | None = None


class WaitingConfirmationView(_Closed):
    """One pending confirmation as the listing returns it (no digest, no task token)."""

    elicitationRef: str
    state: Literal["requested", "awaiting_decision"]
    capability: GatedCapability
    target: str
    reason: str
    principal: str
    requestedBy: str
    createdAtMs: int
    expiresAtMs: int


class WaitingCandidateView(_Closed):
    """One candidate held for adjudication (metadata only: its material stays sealed)."""

    candidateId: str
    principal: str
    capturedAtMs: int
    heldAtMs: int
    policyId: str
    policyVersion: str
    payloadDigest: str


class ConfirmationPage(_Closed):
    """A page of pending confirmations; ``nextCursor`` when more remain."""

    items: list[WaitingConfirmationView] = Field(max_length=MAX_PAGE)
    nextCursor: str | None = None


class AdjudicationPage(_Closed):
    """A page of held candidates; ``nextCursor`` when more remain."""

    items: list[WaitingCandidateView] = Field(max_length=MAX_PAGE)
    nextCursor: str | None = None


class CandidateContent(_Closed):
    """``GET /host/adjudications/{id}``: the held candidate's payload, for the reviewer only
    (decrypted by request_admission; the host API logs and keeps none of it)."""

    candidateId: str
    payload: dict[str, Any]


class MaintainerScopeView(_Closed):
    """``GET /host/whoami``: what the presented maintainer token covers (docs/review.md).

    ``workspaces`` (sorted) for a scoped token; absent when ``tenantWide`` is true.
    """

    tenantId: str
    subject: str
    tenantWide: bool
    workspaces: list[str] | None = None
