"""Identical calls at once: one commits, every other one is its replay (issue 35 item 1).

An agent that retries after a timeout sends the same idempotency key with the same
arguments while the first call may still be running. The contract makes every such call a
replay of the committed result (``replayed: true``; capture answers ``duplicate_exact``).
A loser of the race that read the key before the winner committed and the target after
(the reads of one attempt are not one snapshot) must not answer what the target's new
state says (ALREADY_TERMINAL, NOT_FOUND, gate_failed for the consumed approval): it
answers the replay.

Two kinds of check per tool:

- **Storm**: ``COPIES`` threads released together by a barrier send the identical call,
  ``ROUNDS`` times per tool, each round on a fresh target and approval. Every answer must
  be a success, exactly one fresh, the rest replays of the same receipt.
- **Pinned interleaving**: the winner commits exactly between the loser's two reads (its
  read of the key and approval, then its read of the target), through the botocore hook
  on the loser's second BatchGetItem. Deterministic: it failed on every run before the fix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool

from tests.reliability.support import World, capture_args, new_key, ok

COPIES = 12  # identical calls released at once
ROUNDS = 6  # storms per tool, each on a fresh target (4 tools: 24 storms, 288 calls)

Call = Callable[[], dict[str, Any]]


@pytest.fixture(autouse=True)
def _metrics_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """One process stands in for many Lambda containers here, but Powertools' metric buffer
    is one per process: a thread's flush can find it emptied by another thread's flush
    (SchemaValidationError) — a harness artifact no Lambda sees (one request per
    container). The storms assert envelopes, not metrics."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


def storm(call: Call) -> list[dict[str, Any]]:
    """``COPIES`` threads send ``call`` at the same moment; their envelopes."""
    barrier = threading.Barrier(COPIES)

    def one(_: int) -> dict[str, Any]:
        barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(max_workers=COPIES) as pool:
        return list(pool.map(one, range(COPIES)))


def one_commit_and_replays(envelopes: list[dict[str, Any]], fresh: Callable[[Any], bool],
                           same: Callable[[Any], Any]) -> None:
    """Every envelope succeeded; exactly one is the commit, all others replay it."""
    refusals = [e["error"]["code"] for e in envelopes if not e["ok"]]
    assert refusals == [], f"a replay answered {refusals}"
    values = [ok(e) for e in envelopes]
    assert sum(1 for v in values if fresh(v)) == 1, values
    assert len({repr(same(v)) for v in values}) == 1, values


def _gated(world: World, tool: Tool, field: str, target: str) -> Call:
    args = {field: target, "idempotency_key": new_key(f"storm-{tool.value}"),
            "reason_ref": "reason:retry-storm"}
    ref = world.approve(tool, args)
    return lambda: world.call(tool, args, confirmation_ref=ref)


def _fresh(value: dict[str, Any]) -> bool:
    return value["replayed"] is False


@pytest.fixture
def warm(world: World) -> World:
    """Clients and services built before the threads start."""
    world.record("warm-up")
    return world


@pytest.mark.slow
def test_a_storm_of_identical_withdraws_answers_one_commit_and_its_replays(warm: World) -> None:
    for n in range(ROUNDS):
        call = _gated(warm, Tool.WITHDRAW, "candidate_id", warm.capture(f"withdraw {n}"))
        one_commit_and_replays(storm(call), _fresh, lambda v: v["receipt"])


@pytest.mark.slow
def test_a_storm_of_identical_forgets_answers_one_commit_and_its_replays(warm: World) -> None:
    for n in range(ROUNDS):
        call = _gated(warm, Tool.FORGET, "record_id", warm.record(f"forget {n}"))
        one_commit_and_replays(storm(call), _fresh, lambda v: v["receipt"])


@pytest.mark.slow
def test_a_storm_of_identical_admissions_answers_one_commit_and_its_replays(
        warm: World) -> None:
    for n in range(ROUNDS):
        args = {"candidate_id": warm.capture(f"admit {n}"),
                "idempotency_key": new_key("storm-admit")}
        envelopes = storm(partial(warm.call, Tool.REQUEST_ADMISSION, args))
        one_commit_and_replays(envelopes, _fresh, lambda v: v["outcome"])


@pytest.mark.slow
def test_a_storm_of_identical_captures_answers_one_commit_and_its_replays(warm: World) -> None:
    for n in range(ROUNDS):
        args = capture_args(f"storm {n}")
        envelopes = storm(partial(warm.call, Tool.CAPTURE, args))
        one_commit_and_replays(envelopes, lambda v: v["status"] == "committed_pending",
                               lambda v: v["candidate_id"])


# --- pinned interleavings ------------------------------------------------------------------


def _winner_between_reads(world: World, call: Call, second_read: str) -> dict[str, Any]:
    """Run ``call``; the identical call commits right before its BatchGetItem that asks
    for a sort key starting with ``second_read``. The loser's envelope."""
    fired: list[dict[str, Any]] = []

    def overtake(params: dict[str, Any], **_: Any) -> None:
        sort_keys = [key["sk"]["S"] for table in params["RequestItems"].values()
                     for key in table["Keys"]]
        if not fired and any(sk.startswith(second_read) for sk in sort_keys):
            fired.append({})  # the winner's own reads must not fire again
            fired[0] = call()

    events = bootstrap.dynamodb_client().meta.events
    hook = "before-parameter-build.dynamodb.BatchGetItem"
    events.register(hook, overtake, unique_id="replay-overtake")
    try:
        loser = call()
    finally:
        events.unregister(hook, unique_id="replay-overtake")
    assert fired, "the interleaving did not happen"
    assert ok(fired[0])["replayed"] is False
    return loser


def test_a_withdraw_whose_target_moved_under_its_own_key_answers_the_replay(
        warm: World) -> None:
    call = _gated(warm, Tool.WITHDRAW, "candidate_id", warm.capture("pinned withdraw"))
    loser = _winner_between_reads(warm, call, "CAND#")
    assert ok(loser)["replayed"] is True
    assert ok(loser)["receipt"] == ok(call())["receipt"]


def test_a_forget_whose_target_moved_under_its_own_key_answers_the_replay(
        warm: World) -> None:
    call = _gated(warm, Tool.FORGET, "record_id", warm.record("pinned forget"))
    loser = _winner_between_reads(warm, call, "REC#")
    assert ok(loser)["replayed"] is True
    assert ok(loser)["receipt"] == ok(call())["receipt"]


def test_an_admission_whose_candidate_moved_under_its_own_key_answers_the_replay(
        warm: World) -> None:
    args = {"candidate_id": warm.capture("pinned admission"),
            "idempotency_key": new_key("pinned-admit")}
    call = partial(warm.call, Tool.REQUEST_ADMISSION, args)
    # The winner commits before the loser's second read (record id, tombstone guard).
    loser = _winner_between_reads(warm, call, "TOMB#")
    assert ok(loser)["replayed"] is True
    assert ok(loser)["outcome"] == ok(call())["outcome"]
