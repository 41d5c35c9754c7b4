"""Idempotency intents and operation digests: retries are replays, other intents conflict."""

from __future__ import annotations

from engram_memory.domain.context import Tool
from engram_memory.domain.intent import intent_digest, operation_digest, target_of

WITHDRAW = {"candidate_id": "cand_abc", "idempotency_key": "k" * 16, "reason_ref": "r:1"}


def test_the_same_arguments_give_the_same_intent_whatever_their_order() -> None:
    reordered = dict(reversed(list(WITHDRAW.items())))
    assert intent_digest(Tool.WITHDRAW, WITHDRAW) == intent_digest(Tool.WITHDRAW, reordered)


def test_another_target_tool_or_argument_is_another_intent() -> None:
    base = intent_digest(Tool.WITHDRAW, WITHDRAW)
    assert intent_digest(Tool.WITHDRAW, {**WITHDRAW, "candidate_id": "cand_abd"}) != base
    assert intent_digest(Tool.WITHDRAW, {**WITHDRAW, "reason_ref": "r:2"}) != base
    assert intent_digest(Tool.REQUEST_ADMISSION, WITHDRAW) != base


def test_an_intent_digest_never_equals_the_operation_digest_of_the_same_call() -> None:
    assert intent_digest(Tool.WITHDRAW, WITHDRAW) != operation_digest(Tool.WITHDRAW, WITHDRAW)


def test_targets_per_tool() -> None:
    assert target_of(Tool.WITHDRAW, WITHDRAW) == "cand_abc"
    assert target_of(Tool.FORGET, {"record_id": "mem_a"}) == "mem_a"
    assert target_of(Tool.CAPTURE, {"payload": {}}) == ""
