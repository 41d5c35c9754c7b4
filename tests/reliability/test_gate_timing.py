"""No timing oracle at the gate, nor in get (issue 26 item 2).

An agent holding any ``confirmation_ref`` but no approval gets the byte-identical
``gate_failed`` from withdraw and forget whatever the target: a live record, a pending
candidate, a terminal one, an unknown id, another workspace's id. It must also take the
same time, or a prober could test "is a record with exactly this content live?" (ids are
content digests. Likewise ``get`` of another purpose's record and of an unknown id.

Two checks per tool:

- **Same work**: the AWS calls an unapproved call makes are the same operations,
  whatever the target (deterministic: the botocore call hook).
- **Same time**: the real handlers on the in-process moto tenant, ``ROUNDS`` interleaved
  rounds (each round calls every target once, in a fresh random order, so load drift on a
  shared machine hits every target alike), after ``WARMUP`` discarded rounds. Each
  target's durations are compared with the unknown id's by a two-sided Mann-Whitney U
  test; the test fails when p < ``P_FAIL`` for any target. Before the change an
  unapproved forget of a live record went on to a cancelled TransactWriteItems and a
  GetItem, an unknown id stopped after the read: p ≈ 1e-60 at this sample size. The
  threshold is far from both the noise (p is uniform when the distributions agree: with
  the 8 comparisons here a false alarm is ~8e-6) and the signal.
  A difference must also be large enough to matter: medians more than ``MAX_MEDIAN_GAP``
  apart. On a quiet machine the rank test resolves moto's own work on an item the store
  filters out (moto evaluates the FilterExpression in Python on the found item; DynamoDB
  does it inside the same read): ``get`` of another purpose's record gave p ~ 1e-11 on the
  CI machine with a median within a few percent of the unknown id's. The leak this test
  was written for cost a whole extra transaction and read (tens of percent).
"""

from __future__ import annotations

import random
import secrets
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Scope, Tool
from scipy.stats import mannwhitneyu

from bench.aws_calls import AwsCallCounter
from tests.fixtures.contract_fixtures import CANDIDATE_ID, PURPOSE_REF, RECORD_ID
from tests.reliability.support import World, capture_args, error_of, new_key
from tests.support.events import TENANT_ID

ROUNDS = 150
WARMUP = 10
P_FAIL = 1e-6
MAX_MEDIAN_GAP = 0.10  # relative: |median / unknown's median - 1|
OTHER_WORKSPACE = Scope(TENANT_ID, "ws-other")
OTHER_PURPOSE = "purpose:billing"

Call = Callable[[], dict[str, Any]]


def _unapproved(world: World, tool: Tool, key: str, target: str) -> Call:
    """An unapproved call of ``tool`` on ``target``: a confirmation_ref nobody approved."""
    def call() -> dict[str, Any]:
        args = {key: target, "idempotency_key": new_key("timing"),
                "reason_ref": "reason:timing-probe"}
        return world.call(tool, args, confirmation_ref="conf-" + secrets.token_hex(8))
    return call


def _withdraw_targets(world: World) -> dict[str, Call]:
    pending = world.capture("timing pending")
    withdrawn = world.capture("timing withdrawn")
    world.gated(Tool.WITHDRAW, {"candidate_id": withdrawn, "idempotency_key": new_key("w"),
                                "reason_ref": "reason:setup"})
    admitted = world.capture("timing admitted")
    world.admit(admitted)
    elsewhere = world.capture("timing elsewhere", OTHER_WORKSPACE)
    ids = {"unknown": CANDIDATE_ID, "pending": pending, "withdrawn": withdrawn,
           "admitted": admitted, "other workspace": elsewhere}
    return {name: _unapproved(world, Tool.WITHDRAW, "candidate_id", target)
            for name, target in ids.items()}


def _forget_targets(world: World) -> dict[str, Call]:
    live = world.record("timing live")
    tombstoned = world.record("timing tombstoned")
    world.gated(Tool.FORGET, {"record_id": tombstoned, "idempotency_key": new_key("f"),
                              "reason_ref": "reason:setup"})
    elsewhere = world.record("timing elsewhere", OTHER_WORKSPACE)
    ids = {"unknown": RECORD_ID, "live": live, "tombstoned": tombstoned,
           "other workspace": elsewhere}
    return {name: _unapproved(world, Tool.FORGET, "record_id", target)
            for name, target in ids.items()}


def _get_targets(world: World) -> dict[str, Call]:
    args = capture_args("timing other purpose")
    args["payload"]["purpose_ref"] = OTHER_PURPOSE
    candidate = world.call(Tool.CAPTURE, args)["output"]["value"]["candidate_id"]
    envelope = world.call(Tool.REQUEST_ADMISSION, {
        "candidate_id": candidate, "idempotency_key": new_key("admit")},
        purpose_ref=OTHER_PURPOSE)
    other_purpose = envelope["output"]["value"]["outcome"]["record_id"]

    def get(record_id: str) -> Call:
        return lambda: world.call(Tool.GET, {"record_id": record_id, "purpose_ref": PURPOSE_REF})
    return {"unknown": get(RECORD_ID), "other purpose": get(other_purpose)}


TARGETS = {"withdraw": _withdraw_targets, "forget": _forget_targets, "get": _get_targets}
REFUSAL = {"withdraw": "gate_failed", "forget": "gate_failed", "get": "NOT_FOUND"}


def _refusal(envelope: dict[str, Any]) -> dict[str, Any]:
    error = dict(error_of(envelope))
    return {**error, "auditId": envelope["auditId"]}


def _items_returned(parsed: dict[str, Any], **_: Any) -> None:
    """After-call hook: how many items DynamoDB handed back (the work a found item costs)."""
    found = len(parsed.get("Items", [])) + (1 if parsed.get("Item") else 0)
    found += sum(len(rows) for rows in parsed.get("Responses", {}).values())
    _RETURNED.append(found)


_RETURNED: list[int] = []


@pytest.mark.parametrize("tool", TARGETS)
def test_an_unapproved_call_does_the_same_aws_calls_whatever_the_target(
    world: World, tool: str
) -> None:
    # Same operations, and the same number of items read back: a found item is work
    # (moto serializes it, botocore parses it, the service decodes it) an unknown id skips.
    targets = TARGETS[tool](world)
    client = bootstrap.dynamodb_client()
    counter = AwsCallCounter().attach([client, bootstrap.kms_client()])
    client.meta.events.register("after-call.dynamodb", _items_returned,
                                unique_id="gate-timing-items")
    seen: dict[str, tuple[Counter[str], list[int], dict[str, Any]]] = {}
    try:
        for name, call in targets.items():
            call()  # warm: the handler and its clients exist
            _RETURNED.clear()
            with counter.measure() as block:
                envelope = call()
            seen[name] = (block.calls, list(_RETURNED), _refusal(envelope))
    finally:
        counter.detach()
        client.meta.events.unregister("after-call.dynamodb", unique_id="gate-timing-items")
    unknown = seen["unknown"]
    assert unknown[2]["code"] == REFUSAL[tool]
    for name, observed in seen.items():
        assert observed == unknown, name


def _durations(targets: dict[str, Call]) -> dict[str, list[float]]:
    names = list(targets)
    durations: dict[str, list[float]] = {name: [] for name in names}
    shuffle = random.Random(26).shuffle
    for round_ in range(WARMUP + ROUNDS):
        shuffle(names)
        for name in names:
            start = time.perf_counter()
            targets[name]()
            elapsed = time.perf_counter() - start
            if round_ >= WARMUP:
                durations[name].append(elapsed)
    return durations


@pytest.mark.slow
@pytest.mark.parametrize("tool", TARGETS)
def test_an_unapproved_call_takes_the_same_time_whatever_the_target(
    world: World, tool: str
) -> None:
    # Noisy on a shared machine by nature: the interleaving and the rank test make the
    # verdict depend on a difference between targets, not on the load.
    durations = _durations(TARGETS[tool](world))
    baseline = durations.pop("unknown")
    median_unknown = sorted(baseline)[len(baseline) // 2] * 1000
    report = {}
    for name, sample in durations.items():
        p_value = float(mannwhitneyu(sample, baseline, alternative="two-sided").pvalue)
        median_ms = sorted(sample)[len(sample) // 2] * 1000
        report[name] = (p_value, round(median_ms, 2), round(median_ms / median_unknown - 1, 3))
    print(f"{tool}: unknown median {median_unknown:.2f} ms; (p, median ms, gap) {report}")
    leaks = {name: seen for name, seen in report.items()
             if seen[0] < P_FAIL and abs(seen[2]) > MAX_MEDIAN_GAP}
    assert not leaks, (round(median_unknown, 2), leaks)
