"""The lifecycle transition table and its refusals."""

from __future__ import annotations

import pytest
from engram_memory.domain.errors import AlreadyTerminal, IllegalTransition
from engram_memory.domain.lifecycle import (
    FORGETTABLE_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    Operation,
    State,
    transition,
)


def allowed_operations(state: State) -> frozenset[Operation]:
    """The operations the transition table lets start from ``state``."""
    return frozenset(op for (origin, op) in TRANSITIONS if origin is state)


def test_a_pending_candidate_can_be_accepted_rejected_held_or_withdrawn() -> None:
    assert transition(State.PENDING, Operation.ACCEPT) is State.ACCEPTED_CURRENT
    assert transition(State.PENDING, Operation.REJECT) is State.REJECTED
    assert transition(State.PENDING, Operation.HOLD) is State.PENDING
    assert transition(State.PENDING, Operation.WITHDRAW) is State.WITHDRAWN


@pytest.mark.parametrize("state", sorted(FORGETTABLE_STATES))
def test_every_admitted_state_can_be_forgotten(state: State) -> None:
    assert transition(state, Operation.TOMBSTONE) is State.TOMBSTONED


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
@pytest.mark.parametrize("operation", list(Operation))
def test_nothing_leaves_a_terminal_state(state: State, operation: Operation) -> None:
    with pytest.raises(AlreadyTerminal):
        transition(state, operation)


def test_a_pending_candidate_cannot_be_forgotten_and_a_record_cannot_be_withdrawn() -> None:
    with pytest.raises(IllegalTransition):
        transition(State.PENDING, Operation.TOMBSTONE)
    with pytest.raises(IllegalTransition):
        transition(State.ACCEPTED_CURRENT, Operation.WITHDRAW)


def test_every_unlisted_pair_is_illegal() -> None:
    for state in State:
        if state in TERMINAL_STATES:
            continue
        for operation in Operation:
            if (state, operation) in TRANSITIONS:
                assert transition(state, operation) is TRANSITIONS[(state, operation)]
            else:
                with pytest.raises(IllegalTransition):
                    transition(state, operation)


def test_terminal_states_allow_no_operation() -> None:
    assert all(allowed_operations(state) == frozenset() for state in TERMINAL_STATES)
    assert Operation.WITHDRAW in allowed_operations(State.PENDING)
