"""The host side of the confirmation gate: request, decide and read confirmations.

A confirmation binds one gated call (tool, target, operation digest, principal) to one
human decision. The Step Functions workflow owns the lifecycle (record → await decision →
approved window → expire); this service starts it, records who decided, and signals the
decision through the task token the queue consumer stored on the item. The gated tool
consumes an approved confirmation inside its own transaction (see
``engram_memory.adapters.dynamodb.confirmations.DynamoConfirmationGate``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from engram_memory.domain.canonical import is_digest
from engram_memory.domain.context import MUTATING_TOOLS, Scope, Tool
from engram_memory.domain.errors import (
    DigestConflict,
    GateFailed,
    IllegalTransition,
    InvalidSchema,
    NotFound,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from engram_memory.services.ports import Clock

MAX_TTL_SECONDS = 300
DEFAULT_WINDOW_SECONDS = 30
# How long to keep the item after it can no longer be used (audit, `confirm show`).
RETENTION_AFTER_END_S = 24 * 3600
# Execution-name safe (Step Functions: ≤ 80 of [A-Za-z0-9_-]) and never containing '#'.
REF_RE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
# Bounded wait for the queue consumer to store the task token / for the workflow to move.
POLL_ATTEMPTS = 100  # 10 s in all: well inside API Gateway's 30 s, generous under load
POLL_INTERVAL_S = 0.1


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


class ConfirmationStore(Protocol):
    """Reads confirmation items and records who decided."""

    def get(self, scope: Scope, elicitation_ref: str) -> Confirmation | None:
        """The item, or None when absent."""
        ...

    def record_decision(
        self, scope: Scope, elicitation_ref: str, decision: Decision, approver: str,
        decided_by: str, now_ms: int,
    ) -> None:
        """Record the decision (again if identical); IllegalTransition if another/not awaiting."""
        ...


class ConfirmationWorkflow(Protocol):
    """The Step Functions side: start one execution per confirmation, signal decisions."""

    def start(self, request: ConfirmationRequest) -> None:
        """Start the workflow named after the elicitation ref (idempotent by name)."""
        ...

    def approve(self, task_token: str, approved_at_ms: int, window_ends_at_ms: int) -> None:
        """SendTaskSuccess with the approval instants."""
        ...

    def reject(self, task_token: str) -> None:
        """SendTaskFailure with error ``Rejected``."""
        ...


class ConfirmationService:
    """Request → elicitationRef; decide approve/reject; read state."""

    def __init__(
        self,
        store: ConfirmationStore,
        workflow: ConfirmationWorkflow,
        clock: Clock,
        new_ref: Callable[[], str],
        sleep: Callable[[float], None],
        *,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
    ) -> None:
        self._store = store
        self._workflow = workflow
        self._clock = clock
        self._new_ref = new_ref
        self._sleep = sleep
        self._window_seconds = window_seconds

    def request(
        self, scope: Scope, tool: Tool, target: str, operation_digest: str, principal: str,
        requested_by: str, ttl_seconds: int = MAX_TTL_SECONDS, reason: str = "",
    ) -> Confirmation:
        """Start a confirmation for one gated call; returns it in state ``requested``."""
        if tool not in MUTATING_TOOLS or not is_digest(operation_digest):
            raise InvalidSchema()
        if not 1 <= ttl_seconds <= MAX_TTL_SECONDS or not principal or "#" in target:
            raise InvalidSchema()
        ref = self._new_ref()
        if REF_RE.fullmatch(ref) is None:
            raise StoreUnavailable()
        request = ConfirmationRequest(
            scope=scope, elicitation_ref=ref, tool=tool, target=target,
            operation_digest=operation_digest, principal=principal, requested_by=requested_by,
            created_at_ms=self._clock.now_ms(), ttl_seconds=ttl_seconds,
            window_seconds=self._window_seconds, reason=reason,
        )
        self._workflow.start(request)
        return self._await_recorded(scope, ref)

    def show(self, scope: Scope, elicitation_ref: str) -> Confirmation:
        """The stored confirmation; NotFound when absent or the ref is malformed."""
        if REF_RE.fullmatch(elicitation_ref) is None:
            raise NotFound()
        found = self._store.get(scope, elicitation_ref)
        if found is None:
            raise NotFound()
        return found

    def decide(
        self, scope: Scope, elicitation_ref: str, decision: Decision, approver: str,
        decided_by: str,
    ) -> Confirmation:
        """Record the human decision and signal the workflow; returns the settled state.

        Idempotent for the same decision: a retry after a failed signal re-sends it, and a
        retry after it landed returns the current state. Another decision is refused.
        """
        current = self._await_token(scope, elicitation_ref)
        if current.decision is not None and current.decision != decision.value:
            raise IllegalTransition()
        if current.state is not ConfirmationState.AWAITING_DECISION:
            if current.decision is None:
                raise IllegalTransition()
            return current  # this very decision already settled the workflow
        now = self._clock.now_ms()
        if now >= current.expires_at_ms:
            raise IllegalTransition()
        if current.task_token is None:
            raise StoreUnavailable()
        self._store.record_decision(scope, elicitation_ref, decision, approver, decided_by, now)
        # A spent token (TaskTimedOut/InvalidToken → IllegalTransition) means an earlier
        # send of this recorded decision landed after all: the workflow's write is the truth.
        with suppress(IllegalTransition):
            self._signal(current.task_token, decision, now, current.window_seconds)
        return self._await_state_change(scope, elicitation_ref)

    def _signal(self, task_token: str, decision: Decision, now: int, window_s: int) -> None:
        if decision is Decision.APPROVE:
            self._workflow.approve(task_token, now, now + window_s * 1000)
        else:
            self._workflow.reject(task_token)

    def _await_recorded(self, scope: Scope, elicitation_ref: str) -> Confirmation:
        # The workflow's first state writes the item; answering only once it exists means
        # the returned reference can be decided and read right away.
        for _ in range(POLL_ATTEMPTS):
            found = self._store.get(scope, elicitation_ref)
            if found is not None:
                return found
            self._sleep(POLL_INTERVAL_S)
        raise StoreUnavailable()

    def _await_token(self, scope: Scope, elicitation_ref: str) -> Confirmation:
        # The queue consumer stores the token asynchronously; a decision cannot be sent
        # before it lands, so wait a bounded moment rather than fail a fast human.
        current = self._await_leaving(scope, elicitation_ref, ConfirmationState.REQUESTED)
        if current.state is ConfirmationState.REQUESTED:
            raise StoreUnavailable()
        return current

    def _await_state_change(self, scope: Scope, elicitation_ref: str) -> Confirmation:
        # The workflow writes approved/rejected right after the signal; returning the
        # settled state lets the host hand the reference to the agent immediately.
        return self._await_leaving(scope, elicitation_ref, ConfirmationState.AWAITING_DECISION)

    def _await_leaving(self, scope: Scope, elicitation_ref: str,
                       state: ConfirmationState) -> Confirmation:
        """The confirmation once it left ``state``, or as it is after a bounded wait."""
        current = self.show(scope, elicitation_ref)
        for _ in range(POLL_ATTEMPTS):
            if current.state is not state:
                return current
            self._sleep(POLL_INTERVAL_S)
            current = self.show(scope, elicitation_ref)
        return current
