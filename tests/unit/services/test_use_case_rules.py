"""The write use cases' rules, on the in-memory adapters: fast, no AWS.

The same services the Lambdas run (pipeline, gate order, replay, shredding, tombstone
guard); only the store, the gate's reads and the key vault are in memory. The adapters'
own semantics are held to DynamoDB's by tests/integration/write_path/test_store_contract.py.
"""

from __future__ import annotations

import pytest
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import (
    AlreadyTerminal,
    DigestConflict,
    GateFailed,
    IllegalTransition,
    InvalidSchema,
    NotFound,
)

from tests.fixtures.contract_fixtures import CANDIDATE_ID, valid_capture_args
from tests.unit.services.memory_world import SCOPE, MemoryWorld, forget_args, withdraw_args

TEXT = "The ingest queue retries three times with exponential backoff."
OTHER = "The billing export runs nightly at two in the morning."


def _snapshot(world: MemoryWorld) -> tuple[object, ...]:
    t = world.tables
    return (dict(t.idempotency), dict(t.candidates), dict(t.sealed), dict(t.wrapped_keys),
            dict(t.records), set(t.tombstones), dict(t.heads), dict(t.confirmations))


def test_withdraw_without_an_approval_fails_the_gate_and_changes_nothing() -> None:
    world = MemoryWorld()
    cand = world.capture(TEXT)
    before = _snapshot(world)
    with pytest.raises(GateFailed):
        world.call(Tool.WITHDRAW, withdraw_args(cand), confirmation_ref="ref-none")
    assert _snapshot(world) == before


def test_an_approved_withdraw_shreds_at_once_and_a_replay_needs_no_new_approval() -> None:
    world = MemoryWorld()
    cand = world.capture(TEXT)
    args = withdraw_args(cand)
    first = world.call(Tool.WITHDRAW, args, confirmation_ref=world.approve(
        Tool.WITHDRAW, args, "ref-w1"))
    assert (first["receipt"]["from_state"], first["receipt"]["to_state"]) == (
        "pending", "withdrawn")
    assert first["key_destruction"] == "complete"
    assert (SCOPE, cand) not in world.tables.wrapped_keys
    assert (SCOPE, cand) not in world.tables.sealed
    again = world.call(Tool.WITHDRAW, args)
    assert again["replayed"] is True
    assert again["receipt"] == first["receipt"]


def test_an_approval_is_consumed_once() -> None:
    world = MemoryWorld()
    cand = world.capture(TEXT)
    args = withdraw_args(cand)
    world.call(Tool.WITHDRAW, args, confirmation_ref=world.approve(Tool.WITHDRAW, args, "r1"))
    assert world.tables.confirmations[(SCOPE, "r1")].state.value == "consumed"
    with pytest.raises((GateFailed, AlreadyTerminal)):
        world.call(Tool.WITHDRAW, withdraw_args(cand, "withdraw-key-0002-unit"),
                   confirmation_ref="r1")


def test_an_approval_of_other_arguments_is_a_digest_conflict() -> None:
    world = MemoryWorld()
    cand = world.capture(TEXT)
    world.approve(Tool.WITHDRAW, withdraw_args(cand, "withdraw-key-0009-unit"), "ref-x")
    with pytest.raises(DigestConflict):
        world.call(Tool.WITHDRAW, withdraw_args(cand), confirmation_ref="ref-x")
    assert world.tables.candidates[(SCOPE, cand)].state == "pending"


def test_the_gate_answers_before_the_state_of_an_unknown_target() -> None:
    world = MemoryWorld()
    args = withdraw_args(CANDIDATE_ID)
    with pytest.raises(GateFailed):
        world.call(Tool.WITHDRAW, args, confirmation_ref="ref-none")
    with pytest.raises(NotFound):
        world.call(Tool.WITHDRAW, args, confirmation_ref=world.approve(
            Tool.WITHDRAW, args, "ref-ok"))


def test_withdraw_refuses_a_terminal_or_admitted_candidate_only_to_an_approved_call() -> None:
    world = MemoryWorld()
    cand = world.capture(TEXT)
    world.admit(cand)
    args = withdraw_args(cand)
    with pytest.raises(GateFailed):
        world.call(Tool.WITHDRAW, args, confirmation_ref="ref-none")
    with pytest.raises(IllegalTransition):
        world.call(Tool.WITHDRAW, args, confirmation_ref=world.approve(
            Tool.WITHDRAW, args, "ref-a"))
    rejected = MemoryWorld(mode="reject")
    cand = rejected.capture(TEXT)
    assert rejected.admit(cand)["status"] == "rejected"
    with pytest.raises(AlreadyTerminal):
        rejected.call(Tool.WITHDRAW, args := withdraw_args(cand),
                      confirmation_ref=rejected.approve(Tool.WITHDRAW, args, "ref-b"))


def test_capture_replays_and_refuses_a_secret_before_anything_is_stored() -> None:
    world = MemoryWorld()
    first = world.call(Tool.CAPTURE, valid_capture_args(text=TEXT))
    again = world.call(Tool.CAPTURE, valid_capture_args(text=TEXT))
    assert again == {**first, "status": "duplicate_exact"}
    before = _snapshot(world)
    with pytest.raises(InvalidSchema):
        world.call(Tool.CAPTURE, valid_capture_args(
            text=OTHER + " AKIAIOSFODNN7EXAMPLE", idempotency_key="capture-key-0002-unit"))
    with pytest.raises(DigestConflict):
        world.call(Tool.CAPTURE, valid_capture_args(text=OTHER))  # same key, other intent
    assert _snapshot(world) == before


def test_admission_accepts_once_and_the_same_content_again_is_a_duplicate() -> None:
    world = MemoryWorld()
    accepted = world.admit(world.capture(TEXT))
    assert accepted["status"] == "accepted"
    again = world.admit(world.capture(TEXT, "capture-key-0002-unit"), "admission-key-0002-unit")
    assert (again["status"], again["record_id"]) == ("duplicate_exact", accepted["record_id"])
    events = world.store.journal_events(SCOPE)
    assert [e.body["operation"] for e in events] == ["capture", "accept", "capture", "accept"]


def test_forgotten_content_captured_again_is_held_for_adjudication() -> None:
    world = MemoryWorld()
    record_id = world.admit(world.capture(TEXT))["record_id"]
    args = forget_args(record_id)
    value = world.call(Tool.FORGET, args, confirmation_ref=world.approve(
        Tool.FORGET, args, "ref-f"))
    assert value["receipt"]["to_state"] == "tombstoned"
    assert world.tables.records[(SCOPE, record_id)].state == "tombstoned"
    assert (SCOPE, record_id) not in world.tables.record_content
    held = world.admit(world.capture(TEXT, "capture-key-0002-unit"), "admission-key-0002-unit")
    assert held["status"] == "pending_adjudication"
    again = forget_args(record_id, "forget-key-0002-unit")
    with pytest.raises(AlreadyTerminal):
        world.call(Tool.FORGET, again, confirmation_ref=world.approve(Tool.FORGET, again, "r2"))


def test_a_rejected_candidate_is_shredded_and_a_held_one_keeps_its_material() -> None:
    rejected = MemoryWorld(mode="reject")
    cand = rejected.capture(TEXT)
    rejected.admit(cand)
    assert (SCOPE, cand) not in rejected.tables.wrapped_keys
    held = MemoryWorld(mode="adjudicate")
    cand = held.capture(TEXT)
    assert held.admit(cand)["status"] == "pending_adjudication"
    assert (SCOPE, cand) in held.tables.wrapped_keys
    assert held.tables.candidates[(SCOPE, cand)].state == "pending"


def test_only_a_candidate_held_for_adjudication_can_be_inspected() -> None:
    world = MemoryWorld(mode="adjudicate")
    service = world.services[Tool.REQUEST_ADMISSION]
    cand = world.capture(TEXT)
    with pytest.raises(NotFound):  # pending, but no admission held it for the host
        service.inspect(SCOPE, cand)
    assert world.admit(cand)["status"] == "pending_adjudication"
    shown = service.inspect(SCOPE, cand)
    assert shown["candidate_id"] == cand
    assert TEXT in [c["text"] for c in shown["payload"]["components"]]
    service.adjudicate(SCOPE, cand, "reject", "carol@example.test")
    with pytest.raises(NotFound):
        service.inspect(SCOPE, cand)
