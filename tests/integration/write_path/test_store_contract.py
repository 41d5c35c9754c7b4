"""One contract for the MemoryStore port, run against both adapters so they cannot drift.

The DynamoDB store (on moto) and the in-memory store (adapters/memory, used by the fast
use-case tests in tests/unit/services) must answer the same plans the same way: what a
commit makes readable, and how a lost race or an unusable approval is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.store import DynamoMemoryStore
from engram_memory.adapters.memory.store import InMemoryStore
from engram_memory.adapters.memory.tables import MemoryTables
from engram_memory.domain.context import Scope, Tool
from engram_memory.domain.errors import GateFailed
from engram_memory.domain.journal import Actor, JournalHead, build_event
from engram_memory.services.ports.write import (
    CandidateEntry,
    Change,
    CommitConflict,
    ConflictKind,
    GateConsumption,
    MemoryStore,
    MoveCandidate,
    MutationPlan,
    PutCandidate,
    ReadRequest,
)

SCOPE = Scope("tenant-a", "ws-main")
ACTOR = Actor(principal="user:alice", agent_id="agent:writer", session_id="s-1")
NOW = 1_800_000_000_000
DIGEST = "sha256:" + "ab" * 32
CAND = "cand_" + "c" * 52
Approve = Callable[[str, str], None]  # (ref, operation digest)


@dataclass
class Adapter:
    store: MemoryStore
    approve: Approve


def _memory() -> Adapter:
    tables = MemoryTables()

    def approve(ref: str, digest: str) -> None:
        tables.approve(SCOPE, ref, tool=Tool.WITHDRAW, target=CAND, operation_digest=digest,
                       principal=ACTOR.principal, approved_at_ms=NOW - 1000)
    return Adapter(InMemoryStore(tables), approve)


def _dynamodb(request: pytest.FixtureRequest) -> Adapter:
    aws = request.getfixturevalue("aws")
    client = bootstrap.dynamodb_client()

    def approve(ref: str, digest: str) -> None:
        client.put_item(TableName=aws.settings.table_name, Item={
            "pk": {"S": f"CONF#{SCOPE.key}"}, "sk": {"S": f"REF#{ref}"},
            "state": {"S": "approved"}, "tool": {"S": "withdraw"}, "target": {"S": CAND},
            "operation_digest": {"S": digest}, "principal": {"S": ACTOR.principal},
            "approved_at_ms": {"N": str(NOW - 1000)}, "window_ends_at_ms": {"N": str(NOW + 30_000)},
        })
    return Adapter(DynamoMemoryStore(client, aws.settings.table_name,
                                     aws.settings.key_table_name), approve)


@pytest.fixture(params=["memory", "dynamodb"])
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return _memory() if request.param == "memory" else _dynamodb(request)


def _plan(head: JournalHead, key: str, change: Change,
          gate: GateConsumption | None = None) -> MutationPlan:
    event = build_event(head, scope=SCOPE, operation="capture", subject={"candidate_id": CAND},
                        from_state=None, to_state="pending", actor=ACTOR, at_ms=NOW)
    return MutationPlan(scope=SCOPE, principal=ACTOR.principal, idempotency_key=key,
                        tool="capture", intent_digest=DIGEST, result={"ok": key}, head=head,
                        event=event, changes=(change,), gate=gate, at_ms=NOW)


def _put() -> PutCandidate:
    entry = CandidateEntry(candidate_id=CAND, state="pending", blob_chunks=0,
                           record_digest=DIGEST, payload_digest=DIGEST, policy_id="p",
                           policy_version="1", captured_at_ms=NOW)
    return PutCandidate(entry=entry, sealed=b"sealed-bytes", wrapped_key=b"wrapped",
                        key_id="k", cursor=1)


def _move(from_state: str) -> MoveCandidate:
    return MoveCandidate(candidate_id=CAND, from_state=from_state, to_state="withdrawn",
                         shred=True, blob_chunks=1)


def _consumption(ref: str, digest: str = DIGEST) -> GateConsumption:
    return GateConsumption(scope=SCOPE, confirmation_ref=ref, tool=Tool.WITHDRAW, target=CAND,
                           operation_digest=digest, principal=ACTOR.principal,
                           audit_id="audit-1", at_ms=NOW)


def _everything(store: MemoryStore) -> object:
    return store.read_together(SCOPE, ReadRequest(
        idempotency=(ACTOR.principal, "k1"), candidate_id=CAND, wrapped_key_of=CAND,
        chunks=(CAND, 1), head=True))


def test_a_commit_is_readable_together_in_one_request(adapter: Adapter) -> None:
    adapter.store.commit(_plan(JournalHead(), "k1", _put()))
    found = adapter.store.read_together(SCOPE, ReadRequest(
        idempotency=(ACTOR.principal, "k1"), candidate_id=CAND, wrapped_key_of=CAND,
        chunks=(CAND, 1), head=True))
    assert found.idempotency is not None
    assert found.idempotency.result == {"ok": "k1"}
    assert found.candidate is not None
    assert found.candidate.state == "pending"
    assert found.candidate.blob_chunks == 1
    assert (found.wrapped_key, b"".join(found.chunks)) == (b"wrapped", b"sealed-bytes")
    assert found.head is not None
    assert found.head.cursor == 1
    assert [e.cursor for e in adapter.store.journal_events(SCOPE)] == [1]


def test_lost_races_are_reported_by_kind_and_change_nothing(adapter: Adapter) -> None:
    store = adapter.store
    store.commit(_plan(JournalHead(), "k1", _put()))
    head = store.journal_head(SCOPE)
    before = _everything(store)
    with pytest.raises(CommitConflict) as taken:
        store.commit(_plan(head, "k1", _move("pending")))
    assert ConflictKind.IDEMPOTENCY in taken.value.kinds
    with pytest.raises(CommitConflict) as moved:
        store.commit(_plan(JournalHead(), "k2", _move("pending")))
    assert moved.value.kinds == frozenset({ConflictKind.HEAD})
    assert moved.value.head == head  # the head that won, for a rebuild without a read
    with pytest.raises(CommitConflict) as state:
        store.commit(_plan(head, "k3", _move("rejected")))
    assert state.value.kinds == frozenset({ConflictKind.STATE})
    assert _everything(store) == before


def test_a_hold_marks_the_candidate_held_until_it_leaves_pending(adapter: Adapter) -> None:
    store = adapter.store
    store.commit(_plan(JournalHead(), "k1", _put()))
    assert _candidate(store).held is False  # captured: not yet held for the host
    hold = MoveCandidate(candidate_id=CAND, from_state="pending", to_state="pending",
                         shred=False, blob_chunks=1)
    store.commit(_plan(store.journal_head(SCOPE), "k2", hold))
    assert (_candidate(store).state, _candidate(store).held) == ("pending", True)
    store.commit(_plan(store.journal_head(SCOPE), "k3", _move("pending")))
    assert (_candidate(store).state, _candidate(store).held) == ("withdrawn", False)


def _candidate(store: MemoryStore) -> CandidateEntry:
    found = store.get_candidate(SCOPE, CAND)
    assert found is not None
    return found


def test_an_approval_is_consumed_by_exactly_one_commit_of_its_call(adapter: Adapter) -> None:
    store = adapter.store
    store.commit(_plan(JournalHead(), "k1", _put()))
    adapter.approve("ref-1", DIGEST)
    before = _everything(store)
    with pytest.raises(GateFailed):  # approved, but for other arguments
        store.commit(_plan(store.journal_head(SCOPE), "k2", _move("pending"),
                           _consumption("ref-1", "sha256:" + "cd" * 32)))
    with pytest.raises(GateFailed):  # no such approval
        store.commit(_plan(store.journal_head(SCOPE), "k2", _move("pending"),
                           _consumption("ref-2")))
    assert _everything(store) == before
    store.commit(_plan(store.journal_head(SCOPE), "k2", _move("pending"), _consumption("ref-1")))
    assert store.get_wrapped_key(SCOPE, CAND) is None  # shredded in the same commit
    adapter.approve("ref-3", DIGEST)
    with pytest.raises(GateFailed):  # the gate is checked before the target's state
        store.commit(_plan(store.journal_head(SCOPE), "k3", _move("pending"),
                           _consumption("ref-1")))
