"""The host side of the confirmation gate: request, decide and read confirmations.

A confirmation (``domain/confirmation.py``) binds one gated call (tool, target, operation
digest, principal) to one human decision. The Step Functions workflow owns the lifecycle
(record → await decision → approved window → expire); this service starts it, records who
decided, and signals the decision through the task token the queue consumer stored on the
item. The gated tool consumes an approved confirmation inside its own transaction (see
``engram_memory.adapters.dynamodb.confirmations.DynamoConfirmationGate``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Protocol

from engram_memory.domain.canonical import is_digest
from engram_memory.domain.confirmation import (
    DEFAULT_WINDOW_SECONDS,
    MAX_TTL_SECONDS,
    REF_RE,
    Confirmation,
    ConfirmationRequest,
    ConfirmationState,
    Decision,
)
from engram_memory.domain.context import MUTATING_TOOLS, Scope, Tool
from engram_memory.domain.errors import (
    IllegalTransition,
    InvalidSchema,
    NotFound,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from engram_memory.services.ports.write import Clock

# Bounded wait for the queue consumer to store the task token / for the workflow to move.
POLL_ATTEMPTS = 100  # 10 s in all: well inside API Gateway's 30 s, generous under load
POLL_INTERVAL_S = 0.1


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
