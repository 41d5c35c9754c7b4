"""Races: threads capture, admit, withdraw and forget the same targets with the same keys.

Afterwards every invariant holds: one outcome per idempotency key (one commit, the rest
replays or DIGEST_CONFLICT), one fate per candidate (accepted or withdrawn, never both), a
legal state sequence per target, a gap-free hash-chained journal, no orphan key or
ciphertext, and, once the projector drains, a projection equal to the eligible records.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool

from tests.reliability.support import (
    World,
    capture_args,
    check_invariants,
    idempotency_count,
    new_key,
    ok,
    projection_ids,
)

THREADS = 12
TARGETS = 6
RETRIES = 6
# BLOB_MISSING is NOT a legal race outcome: an admission overtaken by a withdraw answers
# NOT_FOUND (see test_an_admission_overtaken_by_a_withdraw_answers_not_found_not_blob_missing).
DEFINITIVE_REFUSALS = {"ILLEGAL_TRANSITION", "ALREADY_TERMINAL", "NOT_FOUND", "DIGEST_CONFLICT",
                       "gate_failed"}

Task = tuple[str, Callable[[], dict[str, Any]]]


def until_definitive(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """What a client does: retry a retriable answer with the same key and arguments."""
    envelope = call()
    for _ in range(RETRIES):
        if envelope["ok"] or not envelope["error"]["retriable"]:
            return envelope
        envelope = call()
    return envelope


def run_all(tasks: list[Task]) -> dict[str, list[dict[str, Any]]]:
    """Run the tasks in a random order on a thread pool; envelopes grouped by key."""
    random.Random(7).shuffle(tasks)
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        envelopes = list(pool.map(lambda task: until_definitive(task[1]), tasks))
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (key, _), envelope in zip(tasks, envelopes, strict=True):
        grouped[key].append(envelope)
    return grouped


def one_outcome(envelopes: list[dict[str, Any]], fresh: Callable[[dict[str, Any]], bool],
                same: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
    """All successes of one key are one commit (exactly one fresh) and its replays."""
    successes = [ok(e) for e in envelopes if e["ok"]]
    refusals = [e["error"] for e in envelopes if not e["ok"]]
    assert all(r["code"] in DEFINITIVE_REFUSALS for r in refusals), refusals
    if not successes:
        return None
    assert sum(1 for v in successes if fresh(v)) == 1, successes
    assert len({repr(same(v)) for v in successes}) == 1, successes
    return successes[0]


def _capture_tasks(world: World) -> tuple[list[Task], dict[str, dict[str, Any]]]:
    tasks: list[Task] = []
    contents = {}
    for n in range(TARGETS):
        key = new_key(f"race-capture-{n}")
        args, rival = capture_args(f"race {n}", key), capture_args(f"rival {n}", key)
        contents[key] = args
        tasks += [(key, partial(world.call, Tool.CAPTURE, args)) for _ in range(3)]
        tasks.append((key, partial(world.call, Tool.CAPTURE, rival)))
    return tasks, contents


def _gated_tasks(world: World, tool: Tool, target_field: str, target: str,
                 same_key: int, other_keys: int, owners: dict[str, str]) -> list[Task]:
    """``same_key`` threads sharing one key and approval, plus rivals with their own."""
    tasks: list[Task] = []
    for copies in [same_key] + [1] * other_keys:
        args = {target_field: target, "idempotency_key": new_key(f"race-{tool.value}"),
                "reason_ref": "reason:race"}
        owners[args["idempotency_key"]] = target
        ref = world.approve(tool, args)
        tasks += [(args["idempotency_key"], partial(world.call, tool, args,
                                                    confirmation_ref=ref))
                  for _ in range(copies)]
    return tasks


def _admission_tasks(world: World, candidate: str, owners: dict[str, str]) -> list[Task]:
    tasks: list[Task] = []
    for copies in (2, 1):
        args = {"candidate_id": candidate, "idempotency_key": new_key("race-admit")}
        owners[args["idempotency_key"]] = candidate
        tasks += [(args["idempotency_key"], partial(world.call, Tool.REQUEST_ADMISSION, args))
                  for _ in range(copies)]
    return tasks


def _capture_phase(world: World) -> list[str]:
    tasks, contents = _capture_tasks(world)
    candidates = []
    for key, envelopes in run_all(tasks).items():
        winner = one_outcome(envelopes, lambda v: v["status"] == "committed_pending",
                             lambda v: v["candidate_id"])
        assert winner is not None, "every captured key commits once"
        candidates.append(str(winner["candidate_id"]))
        del contents[key]
    assert not contents
    return candidates


def _fate_phase(world: World, candidates: list[str]) -> list[str]:
    tasks: list[Task] = []
    owners: dict[str, str] = {}
    for candidate in candidates:
        tasks += _admission_tasks(world, candidate, owners)
        tasks += _gated_tasks(world, Tool.WITHDRAW, "candidate_id", candidate, 2, 1, owners)
    fates: dict[str, list[str]] = defaultdict(list)
    records = []
    for key, envelopes in run_all(tasks).items():
        winner = one_outcome(envelopes, lambda v: v["replayed"] is False,
                             lambda v: v.get("outcome") or v.get("receipt"))
        if winner is None:
            continue
        if "outcome" in winner:
            fates[owners[key]].append("accepted")
            records.append(str(winner["outcome"]["record_id"]))
        else:
            fates[owners[key]].append("withdrawn")
    census = check_invariants(world)
    for candidate in candidates:
        # One fate per candidate: exactly one key won, and the store agrees with it.
        assert len(fates[candidate]) == 1, (candidate, fates[candidate])
        assert census.candidates[candidate] == fates[candidate][0]
    return records


@pytest.mark.slow
def test_concurrent_lifecycles_on_shared_targets_and_keys_keep_every_invariant(
    world: World,
) -> None:
    world.record("warm-up")  # build clients and services before the threads start
    candidates = _capture_phase(world)
    check_invariants(world)
    # Which side wins the admission/withdraw race is timing: on a loaded box the withdraw
    # (2 round trips) can win all of them. The forget race needs targets whatever happened,
    # so two records admitted outside the race join the ones the race let through.
    records = _fate_phase(world, candidates)
    records += [world.record(f"forget target {n}") for n in range(2)]
    tasks: list[Task] = []
    owners: dict[str, str] = {}
    for record in records:
        tasks += _gated_tasks(world, Tool.FORGET, "record_id", record, 3, 1, owners)
    tasks += [("search", lambda: world.call(Tool.SEARCH, {
        "query": "race queue retries", "purpose_ref": "purpose:engineering-notes"}))
        for _ in range(4)]
    tasks += [("projector", lambda: {"ok": True, "drained": world.project()}) for _ in range(2)]
    grouped = run_all(tasks)
    assert all(e["ok"] for e in grouped.pop("search") + grouped.pop("projector"))
    forgotten = 0
    for key, envelopes in grouped.items():
        if one_outcome(envelopes, lambda v: v["replayed"] is False,
                       lambda v: v["receipt"]) is not None:
            forgotten += 1
            assert idempotency_count(check_invariants(world), key) == 1
    assert forgotten == len(records)
    world.project()
    census = check_invariants(world)
    assert all(census.records[r] == "tombstoned" for r in records)
    eligible = {r for r, state in census.records.items() if state == "accepted_current"}
    assert projection_ids(world) == eligible


def test_an_admission_overtaken_by_a_withdraw_answers_not_found_not_blob_missing(
    world: World,
) -> None:
    world.record("warm-up")
    candidate = world.capture("overtaken")
    withdraw = {"candidate_id": candidate, "idempotency_key": new_key("overtake-wd"),
                "reason_ref": "reason:race"}
    ref = world.approve(Tool.WITHDRAW, withdraw)
    fired: list[dict[str, Any]] = []

    def overtake(params: dict[str, Any], **_: Any) -> None:
        # The withdraw commits exactly after the admission read the candidate, its key and
        # its ciphertext (one batch), while it reads the record id and tombstone guard.
        sort_keys = [key["sk"]["S"] for table in params["RequestItems"].values()
                     for key in table["Keys"]]
        if not fired and any(sk.startswith("TOMB#") for sk in sort_keys):
            fired.append(world.call(Tool.WITHDRAW, withdraw, confirmation_ref=ref))

    events = bootstrap.dynamodb_client().meta.events
    hook = "before-parameter-build.dynamodb.BatchGetItem"
    events.register(hook, overtake, unique_id="overtake")
    try:
        envelope = world.call(Tool.REQUEST_ADMISSION, {
            "candidate_id": candidate, "idempotency_key": new_key("overtake-adm")})
    finally:
        events.unregister(hook, unique_id="overtake")
    assert fired
    assert ok(fired[0])["receipt"]["to_state"] == "withdrawn"
    check_invariants(world)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "NOT_FOUND"
