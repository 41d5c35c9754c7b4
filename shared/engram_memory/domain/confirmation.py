"""A confirmation: one gated call (tool, target, operation digest, principal) bound to one
human decision, and what a stored confirmation says about a call (``verdict_on``).

Pure rules and types; the host-side service that requests and decides confirmations is
``services/confirmation.py``, the gate adapters read items into :class:`Confirmation`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import DigestConflict, GateFailed

MAX_TTL_SECONDS = 300
DEFAULT_WINDOW_SECONDS = 30
# How long to keep the item after it can no longer be used (audit, `confirm show`).
RETENTION_AFTER_END_S = 24 * 3600
# Execution-name safe (Step Functions: ≤ 80 of [A-Za-z0-9_-]) and never containing '#'.
REF_RE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def readable_ref(ref: str | None) -> str | None:
    """The reference worth reading an approval for: None when there is none, or when it is
    one no approval can have (malformed)."""
    return ref if ref is not None and REF_RE.fullmatch(ref) is not None else None


class ConfirmationState(StrEnum):
    """Lifecycle of one confirmation item."""

    REQUESTED = "requested"
    AWAITING_DECISION = "awaiting_decision"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CONSUMED = "consumed"


class Decision(StrEnum):
    """The human decision the host records."""

    APPROVE = "approve"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class ConfirmationRequest:
    """What the workflow records when it starts (all times in epoch ms)."""

    scope: Scope
    elicitation_ref: str
    tool: Tool
    target: str
    operation_digest: str
    principal: str
    requested_by: str
    created_at_ms: int
    ttl_seconds: int
    window_seconds: int
    reason: str = ""
    """The agent's ``reason_ref`` when the host named the call by its arguments, else ""."""

    @property
    def expires_at_ms(self) -> int:
        """Deadline for the human decision."""
        return self.created_at_ms + self.ttl_seconds * 1000

    @property
    def retain_until_s(self) -> int:
        """The DynamoDB TTL (epoch seconds): a day after the confirmation is unusable."""
        end_ms = self.expires_at_ms + self.window_seconds * 1000
        return end_ms // 1000 + RETENTION_AFTER_END_S


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A stored confirmation as the host sees it (never the task token)."""

    elicitation_ref: str
    state: ConfirmationState
    tool: str
    target: str
    operation_digest: str
    principal: str
    created_at_ms: int
    expires_at_ms: int
    window_seconds: int
    task_token: str | None = None
    approved_at_ms: int | None = None
    window_ends_at_ms: int | None = None
    decision: str | None = None
    approver: str | None = None

    def public_view(self) -> dict[str, object]:
        """The JSON the host routes return (camelCase, no token)."""
        view: dict[str, object] = {
            "elicitationRef": self.elicitation_ref,
            "state": self.state.value,
            "capability": self.tool,
            "target": self.target,
            "operationDigest": self.operation_digest,
            "principal": self.principal,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
            "windowSeconds": self.window_seconds,
        }
        optional = {"approvedAtMs": self.approved_at_ms, "windowEndsAtMs": self.window_ends_at_ms,
                    "decision": self.decision, "approver": self.approver}
        view.update({k: v for k, v in optional.items() if v is not None})
        return view


class Verdict(StrEnum):
    """What a stored confirmation says about one gated call, at one instant."""

    APPROVED = "approved"  # usable approval of exactly this call
    OTHER_ARGUMENTS = "other_arguments"  # usable approval of this call, other digest
    NONE = "none"


def verdict_on(found: Confirmation | None, principal: str, tool: str, target: str,
               operation_digest: str, now_ms: int) -> Verdict:
    """Whether ``found`` approves this call now (both gate adapters decide with this)."""
    if found is None:
        return Verdict.NONE
    usable = (found.state is ConfirmationState.APPROVED
              and found.approved_at_ms is not None and found.window_ends_at_ms is not None
              and found.approved_at_ms <= now_ms <= found.window_ends_at_ms)
    same_call = (found.tool == tool and found.target == target
                 and found.principal == principal)
    if not (usable and same_call):
        return Verdict.NONE
    if found.operation_digest != operation_digest:
        return Verdict.OTHER_ARGUMENTS
    return Verdict.APPROVED


def explain(verdict: Verdict, *, refused_by_commit: bool) -> None:
    """Raise what a gate says for ``verdict``: after a cancelled commit only DigestConflict
    names a refusal (else it stays gate_failed); before a state refusal anything but an
    approval is GateFailed."""
    if verdict is Verdict.OTHER_ARGUMENTS:
        raise DigestConflict()
    if not refused_by_commit and verdict is not Verdict.APPROVED:
        raise GateFailed()
