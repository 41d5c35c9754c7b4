"""16 writers on one workspace's journal head: no agent sees FENCE_LOST, nothing is lost.

Issue 25 item 3: a commit that loses the head retries inside the service (bounded,
jittered, within the invocation's time), so the agents of a busy workspace are not told
to retry what the head still had turns for. The writers call the capture Lambda handler
with no retry of their own; afterwards the journal holds every acknowledged capture once,
each writer's captures in the order it made them, and every store invariant holds.

The deterministic "fails before" is tests/unit/services/test_commit_retry.py (a head lost
20 times in a row still commits). Here the old bound's refusals depend on timing (seen:
FENCE_LOST 3 with 16 writers × 4 captures); on a box loaded far beyond CI (load average
17 on 2 cores) this mock_aws run can also reach the 30 s local Lambda budget, which is
the saturation FENCE_LOST is for.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool

from tests.reliability.support import HOME, World, capture_args, check_invariants, new_key

WRITERS = 16
CAPTURES_PER_WRITER = 3
KEYS_SHARED = 4  # keys several writers send at once: one commit, the rest replays
SHARERS = 3


def _writer(world: World, start: threading.Barrier, writer: int) -> list[dict[str, Any]]:
    """Capture one after another, no retry: each envelope as the agent gets it."""
    start.wait()
    envelopes = []
    for n in range(CAPTURES_PER_WRITER):
        envelope = world.call(Tool.CAPTURE, capture_args(f"writer {writer} note {n}",
                                                         new_key(f"contended-{writer}-{n}")))
        envelopes.append(envelope)
    return envelopes


@pytest.mark.slow
def test_sixteen_writers_on_one_head_see_no_fence_lost_and_lose_nothing(world: World) -> None:
    world.record("warm-up")  # clients and services built before the threads start
    bootstrap.override(clock=world.clock, sleep=time.sleep)  # the real backoff waits
    start = threading.Barrier(WRITERS)
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        per_writer = list(pool.map(lambda w: _writer(world, start, w), range(WRITERS)))

    codes = Counter(e["error"]["code"] for envelopes in per_writer for e in envelopes
                    if not e["ok"])
    assert codes == Counter(), codes  # not one FENCE_LOST (nor anything else)
    check_invariants(world)  # gap-free hash chain, one idempotency item per event, ...
    events = world.store().journal_events(HOME)
    captured = [e.body["subject"]["candidate_id"] for e in events
                if e.body["operation"] == "capture"]
    acknowledged = [e["output"]["value"]["candidate_id"] for envelopes in per_writer
                    for e in envelopes]
    assert len(captured) == len(set(captured))  # nothing journaled twice
    assert set(acknowledged) <= set(captured)  # nothing acknowledged is lost
    assert len(captured) == WRITERS * CAPTURES_PER_WRITER + 1  # nor anything unasked
    position = {candidate: n for n, candidate in enumerate(captured)}
    for envelopes in per_writer:
        # A writer's next capture started after the last was acknowledged: later cursor.
        order = [position[e["output"]["value"]["candidate_id"]] for e in envelopes]
        assert order == sorted(order)
        cursors = [int(e["output"]["value"]["cursor"]) for e in envelopes]
        assert cursors == sorted(cursors)


@pytest.mark.slow
def test_contended_retries_of_one_key_commit_once_and_replay(world: World) -> None:
    world.record("warm-up")
    bootstrap.override(clock=world.clock, sleep=time.sleep)
    keys = [new_key(f"shared-{n}") for n in range(KEYS_SHARED)]
    arguments = {key: capture_args(f"shared {key}", key) for key in keys}
    rivals = {key: capture_args(f"rival {key}", key) for key in keys}
    calls = [arguments[key] for key in keys for _ in range(SHARERS)] + list(rivals.values())
    start = threading.Barrier(len(calls))

    def call(args: dict[str, Any]) -> dict[str, Any]:
        start.wait()
        return world.call(Tool.CAPTURE, args)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        envelopes = list(pool.map(call, calls))
    by_key: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for args, envelope in zip(calls, envelopes, strict=True):
        by_key[args["idempotency_key"]].append(envelope)
    for key, answers in by_key.items():
        codes = Counter("ok" if e["ok"] else e["error"]["code"] for e in answers)
        # One intent commits (fresh once, replays after); the other intent of the key is
        # DIGEST_CONFLICT, never retried into a success nor shed as FENCE_LOST.
        assert set(codes) <= {"ok", "DIGEST_CONFLICT"}, (key, codes)
        statuses = Counter(e["output"]["value"]["status"] for e in answers if e["ok"])
        assert statuses["committed_pending"] == 1, (key, statuses)
        winners = {e["output"]["value"]["candidate_id"] for e in answers if e["ok"]}
        assert len(winners) == 1
    census = check_invariants(world)
    assert len(census.idempotency) == KEYS_SHARED + 2  # + the warm-up capture and admission
