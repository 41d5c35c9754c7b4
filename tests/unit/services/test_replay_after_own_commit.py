"""A read that saw the key free but the target after the key's own commit answers the replay.

DynamoDB's BatchGetItem reads each item consistently but not as one snapshot (issue 35
item 1): an identical call's first read can find its idempotency key still free and, in
the same batch, the approval already consumed or the candidate already accepted by the
call that committed that key. Modelled here on the in-memory store: the winner commits
during the loser's first read, and the loser's read returns everything as of after that
commit except the key, read before it. The answer must be the winner's value as a replay,
never gate_failed, NOT_FOUND or ALREADY_TERMINAL; a refusal with the key still free stays
the refusal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import GateFailed, NotFound
from engram_memory.services.ports import ReadRequest, ReadResult

from tests.fixtures.contract_fixtures import valid_request_admission_args
from tests.unit.services.memory_world import MemoryWorld, forget_args, withdraw_args

TEXT = "The ingest queue retries three times with exponential backoff."


def _key_read_before(world: MemoryWorld, winner: Callable[[], dict[str, Any]]) -> list[Any]:
    """The next first read of a mutation misses its key: ``winner`` commits in between."""
    store = world.store
    read = store.read_together
    won: list[Any] = []

    def torn(scope: Scope, request: ReadRequest) -> ReadResult:
        if won or request.idempotency is None:
            return read(scope, request)
        won.append(None)  # the winner's own reads are whole
        won[0] = winner()
        return replace(read(scope, request), idempotency=None)

    store.read_together = torn  # type: ignore[method-assign]
    return won


@pytest.mark.parametrize(("tool", "args_of", "target"), [
    (Tool.WITHDRAW, withdraw_args, "candidate"),
    (Tool.FORGET, forget_args, "record"),
])
def test_a_gated_move_that_read_its_consumed_approval_answers_the_replay(
        tool: Tool, args_of: Callable[[str], dict[str, Any]], target: str) -> None:
    world = MemoryWorld()
    candidate = world.capture(TEXT)
    target_id = candidate if target == "candidate" else world.admit(candidate)["record_id"]
    args = args_of(target_id)
    ref = world.approve(tool, args, "ref-torn")
    won = _key_read_before(world, lambda: world.call(tool, args, confirmation_ref=ref))
    loser = world.call(tool, args, confirmation_ref=ref)
    assert won[0]["replayed"] is False
    assert loser["replayed"] is True
    assert loser["receipt"] == won[0]["receipt"]


def test_an_admission_that_read_its_candidate_accepted_answers_the_replay() -> None:
    world = MemoryWorld()
    args = valid_request_admission_args(candidate_id=world.capture(TEXT),
                                        idempotency_key="admission-key-torn-unit")
    won = _key_read_before(world, lambda: world.call(Tool.REQUEST_ADMISSION, args))
    loser = world.call(Tool.REQUEST_ADMISSION, args)
    assert (won[0]["replayed"], loser["replayed"]) == (False, True)
    assert loser["outcome"] == won[0]["outcome"]


def test_a_consumed_approval_with_the_key_still_free_stays_gate_failed() -> None:
    # Another key consumed the approval (the same operation under a new key): not a replay.
    world = MemoryWorld()
    candidate = world.capture(TEXT)
    args = withdraw_args(candidate)
    ref = world.approve(Tool.WITHDRAW, args, "ref-used")
    world.call(Tool.WITHDRAW, args, confirmation_ref=ref)
    with pytest.raises(GateFailed):
        world.call(Tool.WITHDRAW, withdraw_args(candidate, "withdraw-key-0002-unit"),
                   confirmation_ref=ref)


def test_a_state_refusal_with_the_key_still_free_stays_the_refusal() -> None:
    world = MemoryWorld()
    candidate = world.capture(TEXT)
    world.admit(candidate)
    with pytest.raises(NotFound):
        world.call(Tool.REQUEST_ADMISSION, valid_request_admission_args(
            candidate_id=candidate, idempotency_key="admission-key-0002-unit"))
