"""The memory lifecycle as data: states, operations and the transition table.

A candidate starts ``pending``; admission moves it to ``accepted_current`` (a record) or
``rejected``; withdraw ends it as ``withdrawn``. An admitted record may later be disputed,
superseded (``historical``), expire, lose trust or be forgotten (``tombstoned``). The
``rejected``, ``withdrawn`` and ``tombstoned`` states are terminal: nothing leaves them.
Host-side moves (dispute, supersede, expire, trust invalidation) are listed so the table is
complete; no agent tool performs them.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType

from engram_memory.domain.errors import AlreadyTerminal, IllegalTransition


class State(StrEnum):
    """Every lifecycle state of a candidate or record."""

    PENDING = "pending"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    ACCEPTED_CURRENT = "accepted_current"
    ACCEPTED_DISPUTED = "accepted_disputed"
    HISTORICAL = "historical"
    EXPIRED = "expired"
    TRUST_INVALID = "trust_invalid"
    TOMBSTONED = "tombstoned"


class Operation(StrEnum):
    """Every lifecycle move; the value is the journal's operation name."""

    ACCEPT = "accept"
    REJECT = "reject"
    HOLD = "hold"  # the policy asks for adjudication: the candidate stays pending
    WITHDRAW = "withdraw"
    DISPUTE = "dispute"
    RESOLVE_DISPUTE = "resolve_dispute"
    SUPERSEDE = "supersede"
    EXPIRE = "expire"
    INVALIDATE_TRUST = "invalidate_trust"
    TOMBSTONE = "tombstone"


TERMINAL_STATES = frozenset({State.REJECTED, State.WITHDRAWN, State.TOMBSTONED})
FORGETTABLE_STATES = frozenset({
    State.ACCEPTED_CURRENT,
    State.ACCEPTED_DISPUTED,
    State.HISTORICAL,
    State.EXPIRED,
    State.TRUST_INVALID,
})

_S, _O = State, Operation
TRANSITIONS: MappingProxyType[tuple[State, Operation], State] = MappingProxyType({
    (_S.PENDING, _O.ACCEPT): _S.ACCEPTED_CURRENT,
    (_S.PENDING, _O.REJECT): _S.REJECTED,
    (_S.PENDING, _O.HOLD): _S.PENDING,
    (_S.PENDING, _O.WITHDRAW): _S.WITHDRAWN,
    (_S.ACCEPTED_CURRENT, _O.DISPUTE): _S.ACCEPTED_DISPUTED,
    (_S.ACCEPTED_DISPUTED, _O.RESOLVE_DISPUTE): _S.ACCEPTED_CURRENT,
    (_S.ACCEPTED_CURRENT, _O.SUPERSEDE): _S.HISTORICAL,
    (_S.ACCEPTED_DISPUTED, _O.SUPERSEDE): _S.HISTORICAL,
    (_S.ACCEPTED_CURRENT, _O.EXPIRE): _S.EXPIRED,
    (_S.ACCEPTED_DISPUTED, _O.EXPIRE): _S.EXPIRED,
    (_S.HISTORICAL, _O.EXPIRE): _S.EXPIRED,
    (_S.ACCEPTED_CURRENT, _O.INVALIDATE_TRUST): _S.TRUST_INVALID,
    (_S.ACCEPTED_DISPUTED, _O.INVALIDATE_TRUST): _S.TRUST_INVALID,
    **{(state, _O.TOMBSTONE): _S.TOMBSTONED for state in FORGETTABLE_STATES},
})
"""(from state, operation) → to state; every pair not listed is illegal."""


CANDIDATE_ACCEPTED = "accepted"
"""What a candidate item says once admitted: its lifecycle goes on as the record's."""


def candidate_state(state: State) -> str:
    """The state a candidate item stores for ``state`` (``accepted`` once a record)."""
    return CANDIDATE_ACCEPTED if state is State.ACCEPTED_CURRENT else state.value


def state_of_candidate(stored: str) -> State:
    """The lifecycle state of a candidate item's stored state."""
    return State.ACCEPTED_CURRENT if stored == CANDIDATE_ACCEPTED else State(stored)


def is_terminal(state: State) -> bool:
    """True for states nothing can leave (rejected, withdrawn, tombstoned)."""
    return state in TERMINAL_STATES


def transition(state: State, operation: Operation) -> State:
    """The state ``operation`` leads to from ``state``; AlreadyTerminal / IllegalTransition."""
    if is_terminal(state):
        raise AlreadyTerminal
    target = TRANSITIONS.get((state, operation))
    if target is None:
        raise IllegalTransition
    return target
