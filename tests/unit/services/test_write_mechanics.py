"""Fenced commits, replay detection and commit-error translation (no AWS needed)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from engram_memory.adapters.aws_errors import translate_commit, translate_read
from engram_memory.adapters.dynamodb.items import ElementKind
from engram_memory.domain.context import Scope
from engram_memory.domain.errors import (
    DigestConflict,
    FenceLost,
    GateFailed,
    MutationOutcomeUnknown,
    RateLimited,
    StoreUnavailable,
)
from engram_memory.domain.journal import JournalHead
from engram_memory.services.pipeline import HEAD_POLICY, commit_fenced, stored_result
from engram_memory.services.ports.write import CommitConflict, ConflictKind, IdempotencyEntry

SCOPE = Scope("tenant-a", "ws-main")
KINDS = [ElementKind.IDEMPOTENCY, ElementKind.HEAD, ElementKind.HEAD,
         ElementKind.CONFIRMATION, ElementKind.STATE]


class _HeadMovingStore:
    """A store port whose journal head always moves before the commit lands."""

    def __init__(self, conflicts: int) -> None:
        self.conflicts = conflicts
        self.heads_read = 0

    def journal_head(self, scope: Scope) -> JournalHead:
        self.heads_read += 1
        return JournalHead(self.heads_read - 1)

    def commit(self, plan: Any) -> None:
        if self.conflicts > 0:
            self.conflicts -= 1
            raise CommitConflict(frozenset({ConflictKind.HEAD}))

    def get_idempotency(self, scope: Scope, principal: str, key: str) -> IdempotencyEntry | None:
        return IdempotencyEntry(tool="capture", intent_digest="sha256:a", result={"x": 1})


def _cancelled(*codes: str) -> ClientError:
    return ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "x"},
                        "CancellationReasons": [{"Code": c} for c in codes]},
                       "TransactWriteItems")


def test_a_moved_head_rebuilds_the_event_on_the_new_head() -> None:
    store = _HeadMovingStore(conflicts=2)
    built: list[int] = []
    result = commit_fenced(store, SCOPE, lambda head: (built.append(head.cursor) or
                                                       (None, head.cursor)), lambda _: None)
    assert built == [0, 1, 2]
    assert result == 2


def test_a_head_that_never_settles_is_fence_lost() -> None:
    store = _HeadMovingStore(conflicts=HEAD_POLICY.attempts + 1)
    with pytest.raises(FenceLost):
        commit_fenced(store, SCOPE, lambda head: (None, None), lambda _: None)


def test_a_key_used_for_another_intent_or_tool_is_a_digest_conflict() -> None:
    store = _HeadMovingStore(0)
    assert stored_result(store, SCOPE, "p", "k", "capture", "sha256:a") == {"x": 1}
    with pytest.raises(DigestConflict):
        stored_result(store, SCOPE, "p", "k", "capture", "sha256:b")
    with pytest.raises(DigestConflict):
        stored_result(store, SCOPE, "p", "k", "withdraw", "sha256:a")


def test_cancellation_reasons_map_by_element_index() -> None:
    taken = translate_commit(_cancelled("ConditionalCheckFailed", "None", "None", "None", "None"),
                             KINDS)
    assert isinstance(taken, CommitConflict)
    assert taken.kinds == {ConflictKind.IDEMPOTENCY}
    head = translate_commit(_cancelled("None", "ConditionalCheckFailed", "None", "None", "None"),
                            KINDS)
    assert isinstance(head, CommitConflict)
    assert head.kinds == {ConflictKind.HEAD}
    gate = translate_commit(_cancelled("None", "None", "None", "ConditionalCheckFailed", "None"),
                            KINDS)
    assert isinstance(gate, GateFailed)
    state = translate_commit(_cancelled("None", "None", "None", "None", "ConditionalCheckFailed"),
                             KINDS)
    assert isinstance(state, CommitConflict)
    assert state.kinds == {ConflictKind.STATE}


class _HeadReportingStore(_HeadMovingStore):
    """A store whose lost commits name the head that won, as DynamoDB's ALL_OLD does."""

    def __init__(self, conflicts: int) -> None:
        super().__init__(conflicts)
        self.winner = 0

    def commit(self, plan: Any) -> None:
        if self.conflicts > 0:
            self.conflicts -= 1
            self.winner += 10
            raise CommitConflict(frozenset({ConflictKind.HEAD}), head=JournalHead(self.winner))


def _fenced_commit(conflicts: int) -> tuple[list[int], int, list[float]]:
    """(heads each attempt was built on, head reads, sleeps) against a reporting store."""
    store = _HeadReportingStore(conflicts)
    built: list[int] = []
    slept: list[float] = []
    commit_fenced(store, SCOPE, lambda head: (built.append(head.cursor) or (None, None)),
                  slept.append)
    return built, store.heads_read, slept


def test_a_conflict_naming_the_winning_head_rebuilds_on_it_without_reading_or_waiting() -> None:
    built, heads_read, slept = _fenced_commit(conflicts=1)
    assert built == [0, 10]
    assert heads_read == 1
    assert slept == []


def test_a_head_that_keeps_moving_is_read_again_after_a_jittered_backoff() -> None:
    # Under contention the head named by a conflict is soon stale: after the first
    # immediate rebuild, every further conflict waits and reads the freshest head.
    built, heads_read, slept = _fenced_commit(conflicts=3)
    assert built == [0, 10, 1, 2]
    assert heads_read == 3
    assert len(slept) == 2


def test_a_head_conflict_hands_back_the_head_item_that_won() -> None:
    error = ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "x"},
                         "CancellationReasons": [
                             {"Code": "None"},
                             {"Code": "ConditionalCheckFailed",
                              "Item": {"cursor": {"N": "42"}, "event_digest": {"S": "sha256:e"}}},
                             {"Code": "None"}, {"Code": "None"}, {"Code": "None"}]},
                        "TransactWriteItems")
    conflict = translate_commit(error, KINDS, lambda item: JournalHead(
        int(item["cursor"]["N"]), item["event_digest"]["S"]))
    assert isinstance(conflict, CommitConflict)
    assert conflict.kinds == {ConflictKind.HEAD}
    assert conflict.head == JournalHead(42, "sha256:e")
    # Without the item (or a parser), the caller reads the head again.
    bare = translate_commit(_cancelled("None", "ConditionalCheckFailed", "None", "None", "None"),
                            KINDS, lambda item: JournalHead(0))
    assert isinstance(bare, CommitConflict)
    assert bare.head is None


def test_a_taken_key_wins_over_a_failed_confirmation() -> None:
    both = translate_commit(_cancelled("ConditionalCheckFailed", "None", "None",
                                       "ConditionalCheckFailed", "None"), KINDS)
    assert isinstance(both, CommitConflict)


def test_transport_failures_on_a_commit_are_outcome_unknown() -> None:
    lost = translate_commit(ReadTimeoutError(endpoint_url="https://x"), KINDS)
    assert isinstance(lost, MutationOutcomeUnknown)
    assert isinstance(translate_commit(EndpointConnectionError(endpoint_url="https://x"), KINDS),
                      MutationOutcomeUnknown)


def test_a_service_error_on_a_commit_other_than_a_cancellation_is_outcome_unknown() -> None:
    # Issue 15 item 7: a 500 (after the SDK's retries) became STORE_UNAVAILABLE, although
    # the commit may have landed before it.
    for code in ("InternalServerError", "ServiceUnavailable", "ValidationException"):
        error = ClientError({"Error": {"Code": code}}, "TransactWriteItems")
        assert isinstance(translate_commit(error, KINDS), MutationOutcomeUnknown), code
    throttled = ClientError({"Error": {"Code": "ThrottlingException"}}, "TransactWriteItems")
    assert isinstance(translate_commit(throttled, KINDS), RateLimited)


def test_throttling_and_service_errors_are_retriable() -> None:
    throttled = ClientError({"Error": {"Code": "ThrottlingException"}}, "GetItem")
    assert isinstance(translate_read(throttled), RateLimited)
    assert isinstance(translate_commit(_cancelled("ThrottlingError"), KINDS[:1]), RateLimited)
    broken = ClientError({"Error": {"Code": "InternalServerError"}}, "GetItem")
    assert isinstance(translate_read(broken), StoreUnavailable)
    assert isinstance(translate_read(ReadTimeoutError(endpoint_url="https://x")),
                      StoreUnavailable)
